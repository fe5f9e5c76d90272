package e2e

import (
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

const fleetFile = "testdata/fleet.yaml"

var pytorchJobKind = schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}

func TestMain(m *testing.M) {
	os.Exit(localfleettest.Run(m, localfleettest.WithFleetFile(fleetFile)))
}

// newEnv starts the pipeline with the PyTorchJob test CRD everywhere and the a-then-b policy.
func newEnv(t *testing.T) *e2eenv.Env {
	return e2eenv.New(t, options())
}

// options are the package's environment: the PyTorchJob test CRD everywhere, the a-then-b policy, and
// no PyTorchJob left over from an earlier test.
func options() e2eenv.Options {
	return e2eenv.Options{FleetFile: fleetFile, CRDFiles: []string{"testdata/crds/pytorchjobs.yaml"},
		PolicyFiles: []string{"testdata/policies/a-then-b.yaml"}, CleanKinds: []schema.GroupVersionKind{pytorchJobKind}}
}
