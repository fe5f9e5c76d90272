package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/consumers"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/pipeline"
	"github.com/fleetflow/fleetflow/schemas"
)

func init() {
	registerCommand(newRunCommand)
	registerCommand(newProducerCommand)
	registerCommand(newPlacerCommand)
	registerCommand(newApplierCommand)
}

// defaultWatchedKinds are the framework kinds fleetflow places out of the box.
var defaultWatchedKinds = []string{
	"kubeflow.org/v1/PyTorchJob", "kubeflow.org/v1/MPIJob", "kubeflow.org/v2beta1/MPIJob",
	"jobset.x-k8s.io/v1alpha2/JobSet", "leaderworkerset.x-k8s.io/v1/LeaderWorkerSet",
	"serving.kserve.io/v1beta1/InferenceService", "nvidia.com/v1alpha1/DynamoGraphDeployment",
	"milvus.io/v1beta1/Milvus", "ray.io/v1/RayCluster", "ray.io/v1/RayJob", "ray.io/v1/RayService",
	"apps.nvidia.com/v1alpha1/NIMService",
}

type busFlags struct {
	url     string
	dataDir string
	listen  string
	history string
}

func (f *busFlags) register(flags *pflag.FlagSet) {
	flags.StringVar(&f.url, "nats-url", "", "external NATS JetStream URL; empty embeds a server")
	flags.StringVar(&f.dataDir, "data-dir", ".fleet/nats", "storage of the embedded NATS server")
	flags.StringVar(&f.listen, "nats-listen", "127.0.0.1:4222", "listen address of the embedded NATS server (port 0 picks one)")
	flags.StringVar(&f.history, "history", "168h", "how long events and decisions are kept for audit and replay")
}

func (f *busFlags) open(ctx context.Context, name string) (*pipeline.Bus, error) {
	opts := schemas.DefaultStreamOptions()
	history, err := parseDuration("--history", f.history)
	if err != nil {
		return nil, err
	}
	opts.History = history
	dataDir, err := filepath.Abs(f.dataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %q: %w", f.dataDir, err)
	}
	return pipeline.OpenBus(ctx, pipeline.BusOptions{URL: f.url, DataDir: dataDir, Listen: f.listen, Streams: opts}, name, slog.Default())
}

func parseKinds(values []string) ([]schema.GroupVersionKind, error) {
	kinds := make([]schema.GroupVersionKind, 0, len(values))
	for _, v := range values {
		parts := strings.Split(v, "/")
		var gvk schema.GroupVersionKind
		switch len(parts) {
		case 2:
			gvk = schema.GroupVersionKind{Version: parts[0], Kind: parts[1]}
		case 3:
			gvk = schema.GroupVersionKind{Group: parts[0], Version: parts[1], Kind: parts[2]}
		default:
			return nil, fmt.Errorf("--watch %q: want group/version/Kind (or version/Kind for the core group)", v)
		}
		if gvk.Version == "" || gvk.Kind == "" {
			return nil, fmt.Errorf("--watch %q: version and kind are required", v)
		}
		kinds = append(kinds, gvk)
	}
	return kinds, nil
}

// parseClusters reads repeated name=kubeconfig flags.
func parseClusters(values []string) ([]pipeline.ClusterKubeconfig, error) {
	seen := map[string]bool{}
	var out []pipeline.ClusterKubeconfig
	for _, v := range values {
		name, path, ok := strings.Cut(v, "=")
		if !ok || name == "" || path == "" {
			return nil, fmt.Errorf("--cluster %q: want NAME=KUBECONFIG", v)
		}
		if seen[name] {
			return nil, fmt.Errorf("--cluster %q: cluster %s given twice", v, name)
		}
		seen[name] = true
		out = append(out, pipeline.ClusterKubeconfig{Name: name, Kubeconfig: path})
	}
	return out, nil
}

func signalContext(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
}

func newRunCommand() *cobra.Command {
	var bf busFlags
	var controlPlane string
	var clusterFlags, watch []string
	cmd := &cobra.Command{
		Use:   "run --control-plane KUBECONFIG --cluster NAME=KUBECONFIG...",
		Short: "Run the producer, the placer and one applier per cluster in one process",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			clusters, err := parseClusters(clusterFlags)
			if err != nil {
				return err
			}
			if len(clusters) == 0 {
				return fmt.Errorf("at least one --cluster NAME=KUBECONFIG is required")
			}
			kinds, err := parseKinds(watch)
			if err != nil {
				return err
			}
			cp, err := kube.ClientsFromKubeconfig(controlPlane)
			if err != nil {
				return fmt.Errorf("--control-plane: %w", err)
			}
			all := &pipeline.AllInOne{ControlPlane: cp, Clusters: map[string]*kube.Clients{}, Kinds: kinds}
			names := make([]string, 0, len(clusters))
			for _, c := range clusters {
				clients, err := kube.ClientsFromKubeconfig(c.Kubeconfig)
				if err != nil {
					return fmt.Errorf("--cluster %s: %w", c.Name, err)
				}
				all.Clusters[c.Name] = clients
				names = append(names, c.Name)
			}
			all.Decider = consumers.NewFirstReadyCluster(names...)
			b, err := bf.open(ctx, "fleetflow-run")
			if err != nil {
				return err
			}
			defer b.Close()
			slog.Info("fleetflow running", "nats", b.URL, "clusters", names)
			return all.Run(ctx, b, slog.Default())
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().StringVar(&controlPlane, "control-plane", "", "kubeconfig of the control-plane apiserver")
	cmd.Flags().StringArrayVar(&clusterFlags, "cluster", nil, "workload cluster as NAME=KUBECONFIG (repeatable)")
	cmd.Flags().StringSliceVar(&watch, "watch", defaultWatchedKinds, "workload kinds to place, as group/version/Kind")
	_ = cmd.MarkFlagRequired("control-plane")
	return cmd
}

func newProducerCommand() *cobra.Command {
	var bf busFlags
	var controlPlane string
	var watch []string
	cmd := &cobra.Command{
		Use:   "producer --control-plane KUBECONFIG",
		Short: "Publish control-plane workload changes to JetStream",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			kinds, err := parseKinds(watch)
			if err != nil {
				return err
			}
			cp, err := kube.ClientsFromKubeconfig(controlPlane)
			if err != nil {
				return fmt.Errorf("--control-plane: %w", err)
			}
			b, err := bf.open(ctx, "fleetflow-producer")
			if err != nil {
				return err
			}
			defer b.Close()
			return pipeline.RunProducer(ctx, b, cp, kinds, slog.Default())
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().StringVar(&controlPlane, "control-plane", "", "kubeconfig of the control-plane apiserver")
	cmd.Flags().StringSliceVar(&watch, "watch", defaultWatchedKinds, "workload kinds to place, as group/version/Kind")
	_ = cmd.MarkFlagRequired("control-plane")
	return cmd
}

func newPlacerCommand() *cobra.Command {
	var bf busFlags
	var clusters []string
	cmd := &cobra.Command{
		Use:   "placer --cluster NAME...",
		Short: "Consume workload events and publish placement decisions",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			if len(clusters) == 0 {
				return fmt.Errorf("at least one --cluster NAME is required")
			}
			b, err := bf.open(ctx, "fleetflow-placer")
			if err != nil {
				return err
			}
			defer b.Close()
			return pipeline.RunPlacer(ctx, b, consumers.NewFirstReadyCluster(clusters...), slog.Default())
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().StringSliceVar(&clusters, "cluster", nil, "workload cluster names (repeatable)")
	return cmd
}

func newApplierCommand() *cobra.Command {
	var bf busFlags
	var cluster string
	cmd := &cobra.Command{
		Use:   "applier --cluster NAME=KUBECONFIG",
		Short: "Carry out the placement decisions of one workload cluster",
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext(cmd)
			defer stop()
			parsed, err := parseClusters([]string{cluster})
			if err != nil {
				return err
			}
			clients, err := kube.ClientsFromKubeconfig(parsed[0].Kubeconfig)
			if err != nil {
				return fmt.Errorf("--cluster %s: %w", parsed[0].Name, err)
			}
			b, err := bf.open(ctx, "fleetflow-applier-"+parsed[0].Name)
			if err != nil {
				return err
			}
			defer b.Close()
			return pipeline.RunApplier(ctx, b, parsed[0].Name, clients, slog.Default())
		},
	}
	bf.register(cmd.Flags())
	cmd.Flags().StringVar(&cluster, "cluster", "", "the workload cluster as NAME=KUBECONFIG")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}
