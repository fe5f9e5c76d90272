package natsfaults

import (
	"os"
	"testing"

	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/natscluster"
)

const fleetFile = "testdata/fleet.yaml"

func TestMain(m *testing.M) {
	// First: in a NATS node process this serves and never returns.
	natscluster.RunNodeIfAsked()
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile(fleetFile)))
}
