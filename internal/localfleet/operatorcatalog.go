package localfleet

import "fmt"

// operatorCatalog holds the operators `fleet up --operators` and Fleet.StartOperators can run, each built
// into bin/ by hack/build-tools.sh from tools/<name>.
var operatorCatalog = []Operator{
	{
		// tools/training-operator's main: the v1 controllers without webhooks (see its doc comment).
		Name: "training-operator",
		CRDs: []string{"pytorchjobs.kubeflow.org", "mpijobs.kubeflow.org"},
		Args: func(env OperatorEnv) []string {
			return []string{
				"--kubeconfig=" + env.Kubeconfig,
				"--enable-scheme=pytorchjob",
				"--enable-scheme=mpijob",
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", env.HealthPort),
				"--metrics-bind-address=0",
				"--zap-devel=false",
			}
		},
	},
}
