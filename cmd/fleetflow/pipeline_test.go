package main

import (
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/internal/bus"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
	"github.com/fleetflow/fleetflow/internal/natsauth"
)

// TestPipelineCommandsRefuseBadFlags: flags that cannot work stop a part before it connects anywhere, and
// the error names the flag.
func TestPipelineCommandsRefuseBadFlags(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", t.TempDir()) // no ~/.kube/config
	tests := []struct {
		name    string
		command func() *cobra.Command
		args    []string
		want    string
	}{
		{"status outside a pod without a kubeconfig", newStatusCommand, nil,
			"no kubeconfig: give --kubeconfig, set $KUBECONFIG"},
		{"producer outside a pod without a kubeconfig", newProducerCommand, []string{"--data-dir", "DATA"},
			"no kubeconfig: give --kubeconfig, set $KUBECONFIG"},
		{"producer given both", newProducerCommand, []string{"--control-plane", "a", "--cluster", "b=c"},
			"give the control plane (--kubeconfig, --context) or --cluster, not both"},
		{"producer given a context and a cluster", newProducerCommand, []string{"--context", "a", "--cluster", "b=c"},
			"give the control plane (--kubeconfig, --context) or --cluster, not both"},
		{"status given two kubeconfigs", newStatusCommand, []string{"--control-plane", "a", "--kubeconfig", "b"},
			`--control-plane "a" and --kubeconfig "b" name different files`},
		{"applier given a kubeconfig that is not there", newApplierCommand, []string{"--cluster", "east=DATA/none@admin"},
			`none@admin": no such file`},
		{"no stream replicas", newPlacerCommand, []string{"--stream-replicas", "0", "--data-dir", "DATA"},
			"--stream-replicas 0: JetStream replicates a stream on 1 to 5 servers"},
		{"replicas on the embedded server", newPlacerCommand, []string{"--stream-replicas", "3", "--data-dir", "DATA"},
			"stream replicas 3 need an external JetStream cluster"},
		{"creds on the embedded server", newPlacerCommand, []string{"--nats-creds", "user.creds", "--data-dir", "DATA"},
			"give --nats-url too"},
		{"missing creds file", newPlacerCommand, []string{"--nats-url", "nats://127.0.0.1:1", "--nats-creds", "DATA/none.creds"},
			"nats creds file: stat"},
		{"negative pending timeout", newPlacerCommand, []string{"--pending-timeout", "-1s", "--data-dir", "DATA"},
			"--pending-timeout -1s: must be positive"},
		{"node reports all refused", newPlacerCommand, []string{"--node-report-rate", "0", "--data-dir", "DATA"},
			"--node-report-rate 0: would refuse every node report"},
		{"node reports with no burst", newPlacerCommand, []string{"--node-report-burst", "0.5", "--data-dir", "DATA"},
			"--node-report-burst 0.5: must be at least 1"},
		{"zero heartbeat", newProducerCommand, []string{"--cluster", "east=DATA/kubeconfig", "--heartbeat", "0s", "--data-dir", "DATA"},
			"--heartbeat 0s: must be positive"},
		{"cluster name that is no DNS label", newProducerCommand, []string{"--cluster", "c>=DATA/kubeconfig", "--data-dir", "DATA"},
			`cluster name "c>"`},
		{"cluster name that is no DNS label, applier", newApplierCommand, []string{"--cluster", "East_1=DATA/kubeconfig", "--data-dir", "DATA"},
			`cluster name "East_1"`},
		{"run skipping namespaces by a broken pattern", newRunCommand, []string{"--skip-namespaces", "kube-.*,team-[", "--data-dir", "DATA"},
			`--skip-namespaces: namespace pattern "team-["`},
		{"producer skipping namespaces by a broken pattern", newProducerCommand, []string{"--skip-namespaces", "(", "--data-dir", "DATA"},
			`--skip-namespaces: namespace pattern "("`},
		{"placer keeping history shorter than the duplicate window", newPlacerCommand,
			[]string{"--history", "1m", "--data-dir", "DATA", "--nats-listen", "127.0.0.1:0"},
			`--history "1m": must be at least the streams' duplicate window, 2m0s`},
		{"run keeping history shorter than the duplicate window", newRunCommand,
			[]string{"--history", "100ms", "--control-plane", "DATA/none", "--data-dir", "DATA", "--nats-listen", "127.0.0.1:0"},
			`--history "100ms": must be at least the streams' duplicate window`},
		{"status with a history that is no duration", newStatusCommand,
			[]string{"--history", "1 week", "--control-plane", "DATA/none", "--data-dir", "DATA", "--nats-listen", "127.0.0.1:0"},
			`--history "1 week": time: unknown unit`},
		{"applier with a history that is no duration", newApplierCommand,
			[]string{"--history", "1 week", "--cluster", "east=DATA/none", "--data-dir", "DATA", "--nats-listen", "127.0.0.1:0"},
			`--history "1 week": time: unknown unit`},
		{"producer with a history that is no duration", newProducerCommand,
			[]string{"--history", "1 week", "--cluster", "east=DATA/none", "--data-dir", "DATA", "--nats-listen", "127.0.0.1:0"},
			`--history "1 week": time: unknown unit`},
		{"run with a negative reservation TTL", newRunCommand, []string{"--reservation-ttl", "-5m", "--data-dir", "DATA"},
			"--reservation-ttl -5m0s: must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			err := executeIn(t, tt.command(), tt.args, dir)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error containing %q", err, tt.want)
			}
			if !strings.Contains(tt.want, "external JetStream") && !strings.Contains(tt.want, "--nats-url too") {
				// Refused before any server started: nothing written to the data directory.
				if entries, _ := os.ReadDir(dir); len(entries) != 0 {
					t.Errorf("the data directory holds %d entries: a server started before the flags were checked", len(entries))
				}
			}
		})
	}
}

// TestSkipNamespacesTakesPatternsWithCommas: --skip-namespaces splits a value at its commas, so a pattern with
// one (a repetition count) is given CSV-quoted, as the chart gives every pattern, one flag each.
func TestSkipNamespacesTakesPatternsWithCommas(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		skipped map[string]bool
	}{
		{"the default", nil, map[string]bool{"kube-system": true, "fleetflow-system": true, "team-12": false}},
		{"comma-separated", []string{"--skip-namespaces=kube-.*,infra"}, map[string]bool{"kube-system": true, "infra": true,
			"fleetflow-system": false}},
		{"as the chart gives them", []string{`--skip-namespaces="kube-.*"`, `--skip-namespaces="team-\d{1,3}"`},
			map[string]bool{"kube-system": true, "team-12": true, "team-1234": false, "fleetflow-system": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := &cobra.Command{}
			var skip []string
			registerSkipNamespaces(cmd, &skip)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			re, err := skippedNamespaces(skip)
			if err != nil {
				t.Fatal(err)
			}
			for namespace, want := range tt.skipped {
				if got := re.MatchString(namespace); got != want {
					t.Errorf("namespace %s skipped = %v, want %v (patterns %q)", namespace, got, want, skip)
				}
			}
		})
	}
}

// TestChartArgsAreFlagsOfRun: every argument the fleetflow chart's Deployment gives `fleetflow run` is one of its
// flags, and the pod's probes ask the port fleetflow serves its health on.
func TestChartArgsAreFlagsOfRun(t *testing.T) {
	helm := localfleettest.RequireTool(t, "helm")
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, values := range [][]string{nil, {"nats.url=nats://nats:4222", "nats.credsSecret=c", "nats.tlsSecret=t", "nats.tlsClientCert=true",
		"health.port=9443", "watch={a/v1/B}"}, {"nats.usersSecret=fleetflow-nats-users"},
		{"nats.url=nats://nats:4222", "nats.usersSecret=fleetflow-nats-users", "nats.tlsSecret=t"}} {
		args := []string{"template", "fleetflow", filepath.Join(root, "deploy/chart/fleetflow"), "--namespace", "fleetflow-system",
			"--show-only", "templates/deployment.yaml"}
		for _, v := range values {
			args = append(args, "--set", v)
		}
		out, err := exec.CommandContext(t.Context(), helm, args...).Output()
		if err != nil {
			t.Fatalf("helm %v: %v", args, err)
		}
		var deployment appsv1.Deployment
		if err := sigsyaml.Unmarshal(out, &deployment); err != nil {
			t.Fatal(err)
		}
		container := deployment.Spec.Template.Spec.Containers[0]
		if len(container.Args) == 0 || container.Args[0] != "run" {
			t.Fatalf("container args %v, want fleetflow run", container.Args)
		}
		run, rest, err := newRootCommand().Find(container.Args)
		if err != nil || run.Name() != "run" {
			t.Fatalf("fleetflow %v: %v, %v", container.Args, run, err)
		}
		if err := run.ParseFlags(rest); err != nil {
			t.Errorf("values %v: fleetflow run refuses the chart's args %v: %v", values, container.Args[1:], err)
			continue
		}
		if users, _ := run.Flags().GetString("nats-users"); users != "" {
			mounted := false
			for _, m := range container.VolumeMounts {
				mounted = mounted || m.MountPath == users
			}
			if !mounted {
				t.Errorf("values %v: --nats-users %s is no mount of %+v", values, users, container.VolumeMounts)
			}
		}
		address, _ := run.Flags().GetString("health-address")
		_, port, _ := strings.Cut(address, ":")
		if len(container.Ports) != 1 || strconv.Itoa(int(container.Ports[0].ContainerPort)) != port ||
			container.LivenessProbe == nil || container.LivenessProbe.HTTPGet.Path != "/healthz" || container.LivenessProbe.HTTPGet.Port.StrVal != container.Ports[0].Name ||
			container.ReadinessProbe == nil || container.ReadinessProbe.HTTPGet.Path != "/readyz" || container.ReadinessProbe.HTTPGet.Port.StrVal != container.Ports[0].Name {
			t.Errorf("values %v: --health-address %q, ports %+v, probes %+v and %+v do not agree", values, address, container.Ports,
				container.LivenessProbe, container.ReadinessProbe)
		}
	}
}

// TestChartRefusesADurationWithoutAUnit: a placer duration given as a bare number (placer.failedApplyRetry=300)
// rendered, and fleetflow run refused the flag at every start of the pod; the render now fails naming the value.
func TestChartRefusesADurationWithoutAUnit(t *testing.T) {
	helm := localfleettest.RequireTool(t, "helm")
	root, err := localfleettest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		set     string
		wantErr string
	}{
		{set: "placer.failedApplyRetry=300", wantErr: `placer.failedApplyRetry: "300" is no duration`},
		{set: "placer.heartbeatTimeout=thirty", wantErr: `placer.heartbeatTimeout: "thirty" is no duration`},
		{set: "placer.failedApplyRetry=90s"},
		{set: "placer.pendingTimeout=1h30m"},
		{set: "placer.leaseTTL=15", wantErr: `placer.leaseTTL: "15" is no duration`},
	}
	for _, tt := range tests {
		t.Run(tt.set, func(t *testing.T) {
			out, err := exec.CommandContext(t.Context(), helm, "template", "fleetflow", filepath.Join(root, "deploy/chart/fleetflow"),
				"--namespace", "fleetflow-system", "--show-only", "templates/deployment.yaml", "--set", tt.set).CombinedOutput()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("helm template --set %s: %v\n%s", tt.set, err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(string(out), tt.wantErr)):
				t.Errorf("helm template --set %s: err %v, output %q; want it refused with %q", tt.set, err, out, tt.wantErr)
			}
		})
	}
}

// TestRunServesTheUsersOfNATSUsers: with --nats-users and an embedded server, the server accepts only the
// users of the folder, and each part gets a connection of its own user.
func TestRunServesTheUsersOfNATSUsers(t *testing.T) {
	dir := t.TempDir()
	if _, err := natsauth.LoadOrGenerate(dir, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	f := busFlags{dataDir: t.TempDir(), listen: "127.0.0.1:0", history: "168h", replicas: 1, usersDir: dir}
	b, err := f.open(t.Context(), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, _, err := bus.Connect(b.URL, "anonymous"); !errors.Is(err, nats.ErrAuthorization) {
		t.Errorf("a client without a user connected: %v", err)
	}
	applier, release, err := b.As(natsauth.Applier, "a", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if applier == b {
		t.Error("cluster a's applier got the admin's connection")
	}
}
