package frameworks

import (
	"os"
	"testing"

	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

const (
	fleetFile = "testdata/fleet.yaml"
	// propagatePolicyFile is the level-1 Duplicate policy for labelled CRDs.
	propagatePolicyFile = "testdata/policies/propagate-crds.yaml"
	// placementPolicyFile places every framework kind; the prediction runs the same file.
	placementPolicyFile = "testdata/policies/frameworks.yaml"
)

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile(fleetFile)))
}
