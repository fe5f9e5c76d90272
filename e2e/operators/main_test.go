package operators

import (
	"os"
	"testing"

	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

const (
	fleetFile = "testdata/fleet.yaml"
	operator  = "training-operator"
)

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile(fleetFile), localfleettest.WithOperators(operator)))
}
