package localfleet

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestOperatorCatalog(t *testing.T) {
	env := OperatorEnv{Cluster: "gpu-west", Kubeconfig: "/f/clusters/gpu-west/kubeconfig", HealthPort: 4101, MetricsPort: 4102,
		WebhookPort: 4103, Dir: "/f/x", CertDir: "/f/clusters/gpu-west/certs"}
	tests := []struct {
		name       string
		crds       []string
		wantArgs   []string
		wantConfig []string // lines of config.yaml; none: the operator has no config file
		webhooks   int
	}{
		{
			name: "training-operator",
			crds: []string{"pytorchjobs.kubeflow.org", "mpijobs.kubeflow.org"},
			wantArgs: []string{
				"--kubeconfig=/f/clusters/gpu-west/kubeconfig",
				"--enable-scheme=pytorchjob",
				"--enable-scheme=mpijob",
				"--health-probe-bind-address=127.0.0.1:4101",
			},
		},
		{
			name: "kuberay-operator",
			crds: []string{"rayclusters.ray.io", "rayjobs.ray.io", "rayservices.ray.io"},
			wantArgs: []string{
				"--kubeconfig=/f/clusters/gpu-west/kubeconfig",
				"--health-probe-bind-address=127.0.0.1:4101",
				"--metrics-addr=0",
				"--enable-leader-election=false",
			},
		},
		{
			name:     "jobset-controller",
			crds:     []string{"jobsets.jobset.x-k8s.io"},
			wantArgs: []string{"--kubeconfig=/f/clusters/gpu-west/kubeconfig", "--config=/f/x/config.yaml"},
			wantConfig: []string{
				"apiVersion: config.jobset.x-k8s.io/v1alpha1", "  enable: false", "  host: 127.0.0.1", "  port: 4103",
				"  certDir: /f/x", "  healthProbeBindAddress: 127.0.0.1:4101", `  bindAddress: "0"`, "  leaderElect: false",
			},
			webhooks: 2,
		},
		{
			name:     "lws-controller",
			crds:     []string{"leaderworkersets.leaderworkerset.x-k8s.io"},
			wantArgs: []string{"--kubeconfig=/f/clusters/gpu-west/kubeconfig", "--config=/f/x/config.yaml"},
			wantConfig: []string{
				"apiVersion: config.lws.x-k8s.io/v1alpha1", "  enable: false", "  host: 127.0.0.1", "  port: 4103",
				"  certDir: /f/x", "  healthProbeBindAddress: 127.0.0.1:4101", `  bindAddress: "0"`, "  leaderElect: false",
			},
			webhooks: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			op, err := LookupOperator(tt.name)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(op.CRDs, tt.crds) {
				t.Errorf("CRDs = %v, want %v", op.CRDs, tt.crds)
			}
			args := op.Args(env)
			for _, want := range tt.wantArgs {
				if !slices.Contains(args, want) {
					t.Errorf("args %v lack %s", args, want)
				}
			}
			if (op.Config != nil) != (len(tt.wantConfig) > 0) {
				t.Fatalf("has config file = %t, want %t", op.Config != nil, len(tt.wantConfig) > 0)
			}
			if op.Config != nil {
				lines := strings.Split(string(op.Config(env)), "\n")
				for _, want := range tt.wantConfig {
					if !slices.Contains(lines, want) {
						t.Errorf("config.yaml lacks line %q:\n%s", want, op.Config(env))
					}
				}
			}
			if len(op.Webhooks) != tt.webhooks {
				t.Errorf("%d webhooks, want %d", len(op.Webhooks), tt.webhooks)
			}
		})
	}
}

// TestOperatorCatalogIsSound checks every entry, so that an operator added to the catalog cannot bind a
// fixed port, elect a leader, or lack CRDs to wait for.
func TestOperatorCatalogIsSound(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range operatorCatalog {
		t.Run(op.Name, func(t *testing.T) {
			if op.Name == "" || seen[op.Name] {
				t.Fatalf("empty or duplicate name %q", op.Name)
			}
			seen[op.Name] = true
			if len(op.CRDs) == 0 {
				t.Error("no CRDs to wait for")
			}
			for _, crd := range op.CRDs {
				if strings.Count(crd, ".") < 2 {
					t.Errorf("CRD %q is not <plural>.<group>", crd)
				}
			}
			env := OperatorEnv{Kubeconfig: "/k", HealthPort: 40001, MetricsPort: 40002, WebhookPort: 40003}
			// A setting may be a flag or, for an operator configured by file, in its config.yaml.
			args := strings.Join(op.Args(env), " ")
			if op.Config != nil {
				args += "\n" + string(op.Config(env))
			}
			if !strings.Contains(args, "/k") {
				t.Errorf("args %q do not name the kubeconfig", args)
			}
			if !strings.Contains(args, "127.0.0.1:40001") {
				t.Errorf("args %q do not serve health on 127.0.0.1:HealthPort", args)
			}
			if strings.Contains(args, "leader-elect=true") || strings.Contains(args, "leaderElect: true") {
				t.Errorf("args %q elect a leader", args)
			}
			if len(op.Webhooks) > 0 && !strings.Contains(args, "40003") {
				t.Errorf("args %q do not serve the webhooks on WebhookPort", args)
			}
		})
	}
}

func TestLookupOperatorUnknown(t *testing.T) {
	_, err := LookupOperator("kube-ray")
	if err == nil {
		t.Fatal("no error for an unknown operator")
	}
	for _, want := range []string{`"kube-ray"`, "training-operator"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestCheckOperatorBinaries(t *testing.T) {
	binDir := t.TempDir()
	tests := []struct {
		name    string
		ops     []string
		present bool
		want    []string // substrings of the error; none: no error
	}{
		{name: "unknown", ops: []string{"nope"}, want: []string{`"nope"`, "known: jobset-controller, kuberay-operator, lws-controller, training-operator"}},
		{name: "missing binary", ops: []string{"training-operator"}, want: []string{filepath.Join(binDir, "training-operator"), "go tool task tools"}},
		{name: "present", ops: []string{"training-operator"}, present: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.present {
				if err := os.WriteFile(filepath.Join(binDir, "training-operator"), []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			err := CheckOperatorBinaries(binDir, tt.ops...)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %s", err, want)
				}
			}
		})
	}
}

func TestWebhookConfiguration(t *testing.T) {
	lws, err := LookupOperator("lws-controller")
	if err != nil {
		t.Fatal(err)
	}
	kuberay, err := LookupOperator("kuberay-operator")
	if err != nil {
		t.Fatal(err)
	}
	ca := []byte("-----BEGIN CERTIFICATE-----\n")
	tests := []struct {
		name     string
		op       Operator
		mutating bool
		want     []string // webhook names, in order; none: no configuration
	}{
		{name: "lws mutating", op: lws, mutating: true, want: []string{"mleaderworkerset.kb.io", "mpod.kb.io"}},
		{name: "lws validating", op: lws, want: []string{"vleaderworkerset.kb.io", "vpod.kb.io"}},
		{name: "no webhooks", op: kuberay, mutating: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := webhookConfiguration(tt.op, 4103, ca, tt.mutating)
			if len(tt.want) == 0 {
				if obj != nil {
					t.Fatalf("configuration %v, want none", obj)
				}
				return
			}
			if obj.GetName() != "fleetflow-local-"+tt.op.Name {
				t.Errorf("name %q", obj.GetName())
			}
			hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
			var names []string
			for _, h := range hooks {
				hook := h.(map[string]any)
				names = append(names, hook["name"].(string))
				url, _, _ := unstructured.NestedString(hook, "clientConfig", "url")
				if !strings.HasPrefix(url, "https://127.0.0.1:4103/") {
					t.Errorf("%s: url %q", hook["name"], url)
				}
				bundle, _, _ := unstructured.NestedString(hook, "clientConfig", "caBundle")
				if bundle != base64.StdEncoding.EncodeToString(ca) {
					t.Errorf("%s: caBundle %q", hook["name"], bundle)
				}
				rules, _, _ := unstructured.NestedSlice(hook, "rules")
				resources, _, _ := unstructured.NestedStringSlice(rules[0].(map[string]any), "resources")
				_, selected, _ := unstructured.NestedSlice(hook, "objectSelector", "matchExpressions")
				// A pod webhook must select only the operator's pods: with failurePolicy Fail, a stopped
				// operator would otherwise block every pod of the cluster.
				if slices.Contains(resources, "pods") && !selected {
					t.Errorf("%s: pod webhook without objectSelector", hook["name"])
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("webhooks %v, want %v", names, tt.want)
			}
			if _, err := obj.MarshalJSON(); err != nil {
				t.Errorf("marshal: %v", err)
			}
		})
	}
}
