package browser

import (
	"os"
	"testing"

	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

// fleetFile is the e2e fleet: two small GPU clusters, cluster-a filled first by the a-then-b policy.
const fleetFile = "../testdata/fleet.yaml"

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile(fleetFile)))
}
