package replay

import (
	"os"
	"testing"

	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

const fleetFile = "testdata/fleet.yaml"

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile(fleetFile)))
}
