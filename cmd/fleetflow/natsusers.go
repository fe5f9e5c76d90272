package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/internal/natsauth"
)

func init() { registerCommand(newNATSCommand) }

// The Secrets `nats users` makes: every part's seed in one (the chart's nats.usersSecret, mounted as
// --nats-users), and the servers' authorization block in another.
const (
	natsUsersSecret = "fleetflow-nats-users"
	natsAuthSecret  = "fleetflow-nats-auth"
	natsAuthKey     = "auth.conf"
)

func newNATSCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "nats", Short: "NATS settings for an external server", Args: cobra.NoArgs}
	cmd.AddCommand(newNATSUsersCommand())
	return cmd
}

func newNATSUsersCommand() *cobra.Command {
	var clusters []string
	var dir, namespace, serverConfig string
	var output outputFormat
	cmd := &cobra.Command{
		Use:   "users --clusters A,B [--dir DIR] [--server-config FILE] [-o table|json|yaml]",
		Short: "Make a NATS user per fleetflow part, allowed only that part's subjects",
		Long: `users makes an NKey user for every part of fleetflow: the admin (which provisions the streams), the
placer, the status writer, the control-plane producer, audit and the UI, and each cluster's producer and
applier, each allowed only its subjects (docs/security.md). With --dir it keeps their seeds there, one file per
user (--nats-users of fleetflow run, --nats-nkey of a part), and uses the ones it finds there again.

-o yaml (or json) prints them as Kubernetes Secrets: ` + natsUsersSecret + ` (every seed, the fleetflow chart's
nats.usersSecret) and ` + natsAuthSecret + ` (` + natsAuthKey + `, the authorization block to include in the
configuration of every NATS server); --server-config writes that block to a file too. -o table lists the users.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(clusters) == 0 {
				return usageError(errors.New("--clusters: name the workload clusters"))
			}
			users, err := natsUsers(dir, clusters)
			if err != nil {
				return err
			}
			if serverConfig != "" {
				if err := os.WriteFile(serverConfig, []byte(users.ServerConfig()), 0o600); err != nil {
					return fmt.Errorf("--server-config: %w", err)
				}
			}
			return printNATSUsers(cmd.OutOrStdout(), users, namespace, output)
		},
	}
	cmd.Flags().StringSliceVar(&clusters, "clusters", nil, "the workload clusters, comma-separated (a producer and an applier user each)")
	cmd.Flags().StringVar(&dir, "dir", "", "folder of the users' seeds: those it holds are used again, the others made and written there")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", app.SystemNamespace, "namespace of the Secrets")
	cmd.Flags().StringVar(&serverConfig, "server-config", "", "write the NATS servers' authorization block to this file")
	registerOutput(cmd.Flags(), &output)
	return cmd
}

// natsUsers are the users of clusters: those of dir when it holds them all, else fresh ones (written to dir,
// when given).
func natsUsers(dir string, clusters []string) (*natsauth.Users, error) {
	if dir == "" {
		return natsauth.Generate(clusters)
	}
	return natsauth.LoadOrGenerate(dir, clusters)
}

func printNATSUsers(out io.Writer, users *natsauth.Users, namespace string, output outputFormat) error {
	if output.structured() {
		return output.encode(out, natsUsersSecrets(users, namespace))
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "USER\tROLE\tCLUSTER\tPUBLIC KEY")
	for _, u := range users.All {
		cluster := u.Cluster
		if cluster == "" {
			cluster = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", u.Name, u.Role, cluster, u.PublicKey)
	}
	return tw.Flush()
}

// natsUsersSecrets are the Secrets of users, as a List.
func natsUsersSecrets(users *natsauth.Users, namespace string) map[string]any {
	seeds := map[string]string{}
	for _, u := range users.All {
		seeds[u.Name+".nk"] = string(u.Seed) + "\n"
	}
	secret := func(name string, data map[string]string) *corev1.Secret {
		return &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace,
				Labels: map[string]string{"app.kubernetes.io/part-of": "fleetflow"}},
			Type: corev1.SecretTypeOpaque, StringData: data}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": []*corev1.Secret{secret(natsUsersSecret, seeds),
		secret(natsAuthSecret, map[string]string{natsAuthKey: users.ServerConfig()})}}
}
