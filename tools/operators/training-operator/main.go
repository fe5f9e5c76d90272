// Command training-operator runs the Kubeflow training operator's v1 controllers out of cluster, for the
// local fleet: the upstream main always manages webhook certificates (a Secret, a Service and a
// ValidatingWebhookConfiguration in a namespace it runs in), which a process on loopback has none of, and
// the controllers only start once those certificates exist. This main wires the same controller packages
// without webhooks, leader election or a gang scheduler.
package main

import (
	"flag"
	"os"

	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/util/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	schedulerpluginsv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/kubeflow/training-operator/pkg/config"
	controllerv1 "github.com/kubeflow/training-operator/pkg/controller.v1"
	"github.com/kubeflow/training-operator/pkg/controller.v1/common"
)

func main() {
	var (
		metricsAddr, probeAddr, namespace string
		enabledSchemes                    controllerv1.EnabledSchemes
		controllerThreads                 int
		clientQPS, clientBurst            int
	)
	// "0" disables a server, as in controller-runtime; the local fleet passes free loopback ports.
	flag.StringVar(&metricsAddr, "metrics-bind-address", "0", "The address the metrics endpoint binds to; 0 disables it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", "127.0.0.1:8081", "The address /healthz and /readyz bind to.")
	flag.Var(&enabledSchemes, "enable-scheme", "Enable scheme(s) as --enable-scheme=pytorchjob --enable-scheme=mpijob; all by default.")
	flag.StringVar(&namespace, "namespace", "", "Watch only this namespace; all when empty.")
	flag.IntVar(&controllerThreads, "controller-threads", 1, "Worker threads per controller.")
	flag.IntVar(&clientQPS, "kube-api-qps", 20, "Client QPS towards the apiserver.")
	flag.IntVar(&clientBurst, "kube-api-burst", 30, "Client burst towards the apiserver.")
	// The controllers read these from config.Config; upstream's main sets them from the same flags.
	flag.StringVar(&config.Config.PyTorchInitContainerImage, "pytorch-init-container-image",
		config.PyTorchInitContainerImageDefault, "The image of the PyTorch workers' init container.")
	flag.StringVar(&config.Config.PyTorchInitContainerTemplateFile, "pytorch-init-container-template-file",
		config.PyTorchInitContainerTemplateFileDefault, "The template file of the PyTorch workers' init container.")
	flag.IntVar(&config.Config.PyTorchInitContainerMaxTries, "pytorch-init-container-max-tries",
		config.PyTorchInitContainerMaxTriesDefault, "The number of tries of the PyTorch workers' init container.")
	flag.StringVar(&config.Config.MPIKubectlDeliveryImage, "mpi-kubectl-delivery-image",
		config.MPIKubectlDeliveryImageDefault, "The image of the MPI launcher's init container.")
	opts := zap.Options{Development: true, StacktraceLevel: zapcore.DPanicLevel}
	opts.BindFlags(flag.CommandLine)
	flag.Parse() // --kubeconfig is controller-runtime's own flag
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(kubeflowv1.AddToScheme(scheme))
	// The controllers look these kinds up to decide whether to watch PodGroups.
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	utilruntime.Must(schedulerpluginsv1alpha1.AddToScheme(scheme))

	cfg := ctrl.GetConfigOrDie()
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(float32(clientQPS), clientBurst)
	mgrOpts := ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress: probeAddr,
		LeaderElection:         false,
	}
	if namespace != "" {
		mgrOpts.Cache.DefaultNamespaces = map[string]cache.Config{namespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		log.Error(err, "unable to create the manager")
		os.Exit(1)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		log.Error(err, "unable to add the health check")
		os.Exit(1)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		log.Error(err, "unable to add the ready check")
		os.Exit(1)
	}
	if enabledSchemes.Empty() {
		enabledSchemes.FillAll()
	}
	for _, s := range enabledSchemes {
		setup := controllerv1.SupportedSchemeReconciler[s] // Set accepted only supported schemes
		if err := setup(mgr, common.GenNonGangSchedulerSetupFunc(), controllerThreads); err != nil {
			log.Error(err, "unable to create the controller", "scheme", s)
			os.Exit(1)
		}
	}
	log.Info("starting the manager", "schemes", enabledSchemes.String())
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "the manager stopped")
		os.Exit(1)
	}
}
