package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/internal/kube"
	"github.com/fleetflow/fleetflow/internal/localfleet"
	"github.com/fleetflow/fleetflow/internal/natsauth"
)

func init() { registerCommand(newFleetCommand) }

func newFleetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Run a local fleet of real apiservers: a control plane and workload clusters",
	}
	cmd.AddCommand(newFleetUpCommand(), newFleetDownCommand(), newFleetStatusCommand(), newFleetRunOperatorCommand())
	return cmd
}

func newFleetUpCommand() *cobra.Command {
	var (
		clusters  int
		dir       string
		fleetFile string
		binDir    string
		detach    bool
		register  bool
		runPods   bool
		operators []string
		timeout   time.Duration
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start etcd and one apiserver per cluster, print their kubeconfigs, and run until interrupted",
		Long: `Start one etcd and N+1 kube-apiservers on free loopback ports: a control plane ("control-plane") and
N workload clusters named cluster-1..N, or named by the fleet file. With --fleet, the workload clusters get
the file's nodes (plain Node objects, no kubelet) and the control plane its namespaces, fleetflow's CRDs and
a Cluster for each workload cluster, with the file's labels and taints. --register=false leaves out the CRDs
and the Clusters; the namespaces are created anyway.

Everything lives under --dir: logs, kubeconfigs, pid files and fleet.json. The command stays in the
foreground until SIGINT or SIGTERM and then stops the fleet; with --detach it returns once the fleet is
ready, and "fleetflow fleet down --dir DIR" stops it.

--run-pods also runs kube-scheduler, kube-controller-manager and kwok per workload cluster, so pods are
scheduled to the fleet file's nodes and run. --operators (implies --run-pods) runs each named framework
operator in every workload cluster once its CRDs are served there, which fleetflow's level-1 policy copies:
until then a "fleetflow fleet run-operator" process waits in its place, and then becomes the operator.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := positiveDurations(map[string]time.Duration{"--timeout": timeout}); err != nil {
				return err
			}
			if len(operators) > 0 {
				runPods = true
				if err := localfleet.CheckOperatorBinaries(binDir, operators...); err != nil {
					return fmt.Errorf("--operators: %w", err)
				}
			}
			var spec *fleetspec.Fleet
			var names []string
			if fleetFile != "" {
				data, err := os.ReadFile(fleetFile)
				if err != nil {
					return fmt.Errorf("--fleet: %w", err)
				}
				if spec, err = fleetspec.Parse(data, fleetFile); err != nil {
					return err
				}
				for i, c := range spec.Clusters {
					if c.Name == localfleet.ControlPlaneName {
						// The fleet's own control plane takes that name (its directory, etcd prefix and kubeconfig).
						return fmt.Errorf("fleet %s: clusters[%d].name: %q is reserved for the local fleet's control plane",
							fleetFile, i, c.Name)
					}
					names = append(names, c.Name)
				}
				if cmd.Flags().Changed("clusters") && clusters != len(names) {
					return fmt.Errorf("--clusters %d disagrees with %s, which describes %d clusters", clusters, fleetFile, len(names))
				}
			} else {
				if clusters < 0 {
					return fmt.Errorf("--clusters must be 0 or more, got %d", clusters)
				}
				for i := 1; i <= clusters; i++ {
					names = append(names, fmt.Sprintf("cluster-%d", i))
				}
			}

			ctx, stopSignals := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stopSignals()
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			startCtx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			fleet, err := localfleet.Start(startCtx, localfleet.Options{
				Dir:          dir,
				Clusters:     names,
				BinDir:       binDir,
				Logger:       slog.Default(),
				StartTimeout: timeout,
				Detach:       detach,
				RunPods:      runPods,
				Progress:     func(p localfleet.Progress) { fmt.Fprintf(errOut, "fleet: %s\n", p) },
			})
			if err != nil {
				return err
			}
			stopFleet := func() error {
				stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				fmt.Fprintln(errOut, "fleet: stopping")
				return fleet.Stop(stopCtx)
			}
			if spec != nil {
				if err := localfleet.Seed(ctx, fleet, spec); err != nil {
					return errors.Join(err, stopFleet())
				}
				for _, c := range spec.Clusters {
					fmt.Fprintf(errOut, "fleet: %s: seeded %d nodes\n", c.Name, len(c.AllNodes()))
				}
				if register {
					controlPlane, err := kube.NewClients(fleet.ControlPlane.RESTConfig())
					if err == nil {
						err = registerFleet(ctx, controlPlane, fleet, spec, "fleetflow-fleet")
					}
					if err != nil {
						return errors.Join(err, stopFleet())
					}
					fmt.Fprintf(errOut, "fleet: registered %d workload clusters on the control plane, with the fleet file's labels and taints\n",
						len(spec.Clusters))
				}
			}
			if len(operators) > 0 {
				if err := startOperatorRunners(fleet, binDir, operators); err != nil {
					return errors.Join(err, stopFleet())
				}
				fmt.Fprintf(errOut, "fleet: %s will start in each workload cluster once its CRDs are served there\n",
					strings.Join(operators, ", "))
			}
			// A NATS user per part of fleetflow for these clusters, kept with the fleet: fleetflow run
			// --nats-users, or a part's --nats-nkey, connects as them.
			usersDir := filepath.Join(fleet.Dir, "nats-users")
			if _, err := natsauth.LoadOrGenerate(usersDir, names); err != nil {
				return errors.Join(err, stopFleet())
			}
			printClusters(out, fleet.State())
			fmt.Fprintf(out, "\nNATS users of fleetflow's parts (fleetflow run --nats-users): %s\n", usersDir)
			example := fleet.ControlPlane
			if len(fleet.Workloads) > 0 {
				example = fleet.Workloads[0]
			}
			fmt.Fprintf(out, "\nTry: kubectl --kubeconfig %s get nodes\n", example.KubeconfigPath)
			if detach {
				fmt.Fprintf(out, "The fleet keeps running. Stop it with: fleetflow fleet down --dir %s\n", fleet.Dir)
				return nil
			}
			fmt.Fprintf(out, "Logs and state in %s. Press Ctrl-C to stop the fleet.\n", fleet.Dir)
			select {
			case <-ctx.Done():
				return stopFleet()
			case <-fleet.Exited():
				return errors.Join(fleet.ExitErr(), stopFleet())
			}
		},
	}
	cmd.Flags().IntVar(&clusters, "clusters", 3, "number of workload clusters, named cluster-1..N (with --fleet, the file names them)")
	cmd.Flags().StringVar(&dir, "dir", ".fleet", "directory for the fleet's data, logs, kubeconfigs and state")
	cmd.Flags().StringVar(&fleetFile, "fleet", "", "fleet description (YAML) naming the clusters and the nodes to seed")
	cmd.Flags().StringVar(&binDir, "bin-dir", "bin", "directory holding the etcd and kube-apiserver binaries")
	cmd.Flags().BoolVar(&detach, "detach", false, "return once the fleet is ready and leave it running")
	cmd.Flags().BoolVar(&register, "register", true, "with --fleet, install fleetflow's CRDs on the control plane and register each workload "+
		"cluster there (a Cluster with the file's labels and taints, its kubeconfig in a Secret), so \"fleetflow run --control-plane\" "+
		"needs no --cluster")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Minute, "how long startup may take")
	cmd.Flags().BoolVar(&runPods, "run-pods", false, "also run kube-scheduler, kube-controller-manager and kwok per workload cluster, "+
		"so pods are scheduled to the seeded nodes and run")
	cmd.Flags().StringSliceVar(&operators, "operators", nil, "framework operators to run in every workload cluster once their CRDs "+
		"are served there (implies --run-pods): "+strings.Join(localfleet.OperatorNames(), ", "))
	return cmd
}

// startOperatorRunners starts, per workload cluster and operator, this executable as "fleet run-operator",
// which waits for the operator's CRDs and then becomes the operator: a detached fleet gets its operators
// although fleet up has returned, and fleet down stops them by their pid files like any fleet process.
func startOperatorRunners(fleet *localfleet.Fleet, binDir string, operators []string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("--operators: %w", err)
	}
	absBin, err := filepath.Abs(binDir)
	if err != nil {
		return fmt.Errorf("--operators: %w", err)
	}
	for _, c := range fleet.Workloads {
		command := func(operator string) (string, []string) {
			return self, []string{"fleet", "run-operator", "--dir", fleet.Dir, "--bin-dir", absBin, "--cluster", c.Name, "--operator", operator}
		}
		if err := fleet.StartOperatorRunners(c.Name, command, operators...); err != nil {
			return err
		}
	}
	return nil
}

func newFleetRunOperatorCommand() *cobra.Command {
	var dir, binDir, cluster, operator string
	cmd := &cobra.Command{
		Use:    "run-operator",
		Short:  "Wait until an operator's CRDs are served in a cluster of the fleet, then run the operator in this process",
		Hidden: true, // started by fleet up --operators
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			slog.Info("waiting for the operator's CRDs", "cluster", cluster, "operator", operator)
			return localfleet.RunOperator(ctx, dir, binDir, cluster, operator)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".fleet", "directory of the fleet")
	cmd.Flags().StringVar(&binDir, "bin-dir", "bin", "directory holding the operator's binary")
	cmd.Flags().StringVar(&cluster, "cluster", "", "workload cluster to run the operator against")
	cmd.Flags().StringVar(&operator, "operator", "", "operator to run: "+strings.Join(localfleet.OperatorNames(), ", "))
	_ = cmd.MarkFlagRequired("cluster")
	_ = cmd.MarkFlagRequired("operator")
	return cmd
}

// registerFleet installs fleetflow's CRDs on the fleet's control plane and registers each workload cluster of spec
// there, as fieldManager, with the file's labels and taints: policies written against the fleet file's labels
// select them.
func registerFleet(ctx context.Context, controlPlane *kube.Clients, fleet *localfleet.Fleet, spec *fleetspec.Fleet,
	fieldManager string) error {
	if err := app.InstallControlPlaneCRDs(ctx, controlPlane, fieldManager); err != nil {
		return err
	}
	for _, c := range spec.Clusters {
		target, ok := fleet.Cluster(c.Name)
		if !ok {
			return fmt.Errorf("cluster %s of the fleet file did not start", c.Name)
		}
		kubeconfig, err := os.ReadFile(target.KubeconfigPath)
		if err != nil {
			return err
		}
		if err := app.RegisterCluster(ctx, controlPlane, c.Name, kubeconfig, c.Labels, c.Taints, fieldManager); err != nil {
			return err
		}
	}
	return nil
}

func newFleetDownCommand() *cobra.Command {
	var (
		dir   string
		grace time.Duration
	)
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the fleet in --dir by the pids it recorded, also one started by another process",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if grace < 0 {
				return fmt.Errorf("--grace %s: must be 0 (SIGKILL at once) or more", grace)
			}
			stopped, err := localfleet.Down(cmd.Context(), dir, grace)
			if err != nil {
				return err
			}
			if len(stopped) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no running fleet processes in %s\n", dir)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped %d fleet processes in %s: %v\n", len(stopped), dir, stopped)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".fleet", "directory of the fleet")
	cmd.Flags().DurationVar(&grace, "grace", 10*time.Second, "time between SIGTERM and SIGKILL (0: SIGKILL at once)")
	return cmd
}

func newFleetStatusCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the clusters of the fleet in --dir and whether their apiservers still run",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			state, err := localfleet.ReadState(dir)
			if err != nil {
				return err
			}
			printClusters(cmd.OutOrStdout(), *state)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".fleet", "directory of the fleet")
	return cmd
}

func printClusters(out io.Writer, state localfleet.State) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tROLE\tSERVER\tPID\tKUBECONFIG")
	for _, c := range state.Clusters {
		pid := fmt.Sprint(c.PID)
		if !localfleet.ProcessAlive(c.PID) {
			pid += " (gone)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", c.Name, c.Role, c.Server, pid, c.Kubeconfig)
	}
	w.Flush()
	printOperators(out, state)
}

// printOperators lists the framework operators of each workload cluster, if any, with pid and state.
func printOperators(out io.Writer, state localfleet.State) {
	var rows []string
	for _, c := range state.Clusters {
		for _, comp := range c.Components {
			if comp.Operator {
				rows = append(rows, fmt.Sprintf("%s\t%s\t%d\t%s\t%s", c.Name, comp.Name, comp.PID,
					localfleet.OperatorProcessState(comp), comp.LogPath))
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(out)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tOPERATOR\tPID\tSTATE\tLOG")
	for _, row := range rows {
		fmt.Fprintln(w, row)
	}
	w.Flush()
}
