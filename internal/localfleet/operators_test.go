package localfleet

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestOperatorCatalog(t *testing.T) {
	env := OperatorEnv{Cluster: "gpu-west", Kubeconfig: "/f/clusters/gpu-west/kubeconfig", HealthPort: 4101, MetricsPort: 4102, Dir: "/f/x"}
	tests := []struct {
		name     string
		crds     []string
		wantArgs []string
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
			env := OperatorEnv{Kubeconfig: "/k", HealthPort: 40001, MetricsPort: 40002}
			args := strings.Join(op.Args(env), " ")
			if !strings.Contains(args, "/k") {
				t.Errorf("args %q do not name the kubeconfig", args)
			}
			if !strings.Contains(args, "127.0.0.1:40001") {
				t.Errorf("args %q do not serve health on 127.0.0.1:HealthPort", args)
			}
			if strings.Contains(args, "leader-elect=true") {
				t.Errorf("args %q elect a leader", args)
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
		{name: "unknown", ops: []string{"nope"}, want: []string{`"nope"`, "known: training-operator"}},
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
