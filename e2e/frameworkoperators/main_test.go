package frameworkoperators

import (
	"os"
	"testing"

	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

const fleetFile = "testdata/fleet.yaml"

// operators are started in every workload cluster once fleetflow has copied their CRDs there.
var operators = []string{"kuberay-operator", "jobset-controller", "lws-controller"}

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile(fleetFile), localfleettest.WithOperators(operators...)))
}
