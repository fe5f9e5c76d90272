package localfleet

import (
	"fmt"
	"path/filepath"
)

// operatorCatalog holds the operators `fleet up --operators` and Fleet.StartOperators can run, each built
// into bin/ by hack/build-tools.sh from tools/operators.
var operatorCatalog = []Operator{
	{
		// tools/operators/training-operator's main: the v1 controllers without webhooks (see its doc comment).
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
	{
		// Upstream's main; its webhook is off unless ENABLE_WEBHOOKS=true. RayCluster, RayJob and RayService
		// controllers always run, so all three CRDs must be served.
		Name: "kuberay-operator",
		CRDs: []string{"rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io"},
		Args: func(env OperatorEnv) []string {
			return []string{
				"--kubeconfig=" + env.Kubeconfig,
				fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", env.HealthPort),
				"--metrics-addr=0",
				"--enable-leader-election=false",
				"--log-stdout-encoder=console",
			}
		},
	},
	{
		// Upstream's main always serves its webhooks; the defaulting one fills in what the controller
		// dereferences (success and startup policy, network), so it runs, registered by URL.
		Name:   "jobset-controller",
		CRDs:   []string{"jobsets.jobset.x-k8s.io"},
		Args:   configFileArgs,
		Config: controllerConfig("config.jobset.x-k8s.io/v1alpha1"),
		Webhooks: []OperatorWebhook{
			{Name: "mjobset.kb.io", Path: "/mutate-jobset-x-k8s-io-v1alpha2-jobset", Mutating: true,
				Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"},
			{Name: "vjobset.kb.io", Path: "/validate-jobset-x-k8s-io-v1alpha2-jobset",
				Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"},
		},
	},
	{
		// Upstream's main. Its pod webhook labels each leader pod with its group index, which the controller
		// needs to create the workers and compute the status, so its webhooks run, registered by URL.
		Name:   "lws-controller",
		CRDs:   []string{"leaderworkersets.leaderworkerset.x-k8s.io"},
		Args:   configFileArgs,
		Config: controllerConfig("config.lws.x-k8s.io/v1alpha1"),
		Webhooks: []OperatorWebhook{
			{Name: "mleaderworkerset.kb.io", Path: "/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset", Mutating: true,
				Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"},
			{Name: "vleaderworkerset.kb.io", Path: "/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
				Group: "leaderworkerset.x-k8s.io", Version: "v1", Resource: "leaderworkersets"},
			{Name: "mpod.kb.io", Path: "/mutate--v1-pod", Mutating: true,
				Version: "v1", Resource: "pods", LabelKey: "leaderworkerset.sigs.k8s.io/name"},
			{Name: "vpod.kb.io", Path: "/validate--v1-pod",
				Version: "v1", Resource: "pods", LabelKey: "leaderworkerset.sigs.k8s.io/name"},
		},
	},
}

// configFileArgs are the flags of an operator configured by env.Dir/config.yaml (see controllerConfig).
func configFileArgs(env OperatorEnv) []string {
	return []string{
		"--kubeconfig=" + env.Kubeconfig,
		"--config=" + filepath.Join(env.Dir, "config.yaml"),
		"--zap-devel=false",
	}
}

// controllerConfig returns the configuration file of JobSet and LWS, which share its schema: their own
// certificate management off (it would write a Secret and patch webhook configurations named for an
// in-cluster Service), webhooks on env.WebhookPort with the certificate in env.Dir, health on
// env.HealthPort, no metrics, no leader election. Only the file sets the webhook port and certificate.
func controllerConfig(apiVersion string) func(OperatorEnv) []byte {
	return func(env OperatorEnv) []byte {
		return fmt.Appendf(nil, `apiVersion: %s
kind: Configuration
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: "0"
leaderElection:
  leaderElect: false
`, apiVersion, env.WebhookPort, env.Dir, env.HealthPort)
	}
}
