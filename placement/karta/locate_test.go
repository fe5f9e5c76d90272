package karta

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestErrorsNameTheFieldOfTheCR: an analysis error names the CR's own field, found whatever jq the RI reads
// it with, and leaves the jq to Expr; a value found in several places is told apart by the component it is
// for, and one it cannot place is named by the RI's field instead.
func TestErrorsNameTheFieldOfTheCR(t *testing.T) {
	tests := []struct {
		name, cr, wantPath string
	}{
		{"replicas of a replica type", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch}]}}}
    Worker: {replicas: -4, template: {spec: {containers: [{name: pytorch}]}}}`,
			"spec.pytorchReplicaSpecs.Worker.replicas"},
		{"the same bad value for two components, told apart by name", `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: -4, template: {spec: {containers: [{name: pytorch}]}}}
    Worker: {replicas: -4, template: {spec: {containers: [{name: pytorch}]}}}`,
			"spec.pytorchReplicaSpecs.Master.replicas"},
		{"a Deployment's replicas", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml}
spec: {replicas: -1, template: {spec: {containers: [{name: web}]}}}`,
			"spec.replicas"},
		{"a container of a template", `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: ml, annotations: {a.b/c: "x"}}
spec: {replicas: 1, template: {spec: {containers: [{name: web, resources: {requests: {nvidia.com/gpu: "-1"}}}]}}}`,
			"spec.template.spec.containers[web].resources.requests[nvidia.com/gpu]"},
	}
	reg := builtinRegistry(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := mustParseObject(t, tt.cr)
			c, _ := reg.Lookup(GVKOf(obj))
			_, err := c.Analyze(obj)
			var ae *AnalysisError
			if !errors.As(err, &ae) {
				t.Fatalf("Analyze error %v, want an AnalysisError", err)
			}
			if ae.Path != tt.wantPath || !strings.Contains(err.Error(), tt.wantPath+": ") {
				t.Errorf("error %q at %q, want it at %q", err, ae.Path, tt.wantPath)
			}
			if ae.Expr != "" && strings.Contains(err.Error(), ae.Expr) {
				t.Errorf("error %q shows the RI's jq %q", err, ae.Expr)
			}
		})
	}
}

// TestFieldOfCannotTellIsEmpty: a scalar in many places, or in several none of which names the component, is
// not guessed at.
func TestFieldOfCannotTellIsEmpty(t *testing.T) {
	obj := map[string]any{"spec": map[string]any{"a": map[string]any{"n": -4.0}, "b": map[string]any{"n": -4.0}}}
	if got := fieldOf(obj, -4.0, "worker"); got != "" {
		t.Errorf("fieldOf = %q, want \"\": two places, neither under worker", got)
	}
	if got := fieldOf(obj, -4.0, "b"); got != "spec.b.n" {
		t.Errorf("fieldOf = %q, want spec.b.n, the one under the component's name", got)
	}
	if got := fieldOf(obj, true, "b"); got != "" {
		t.Errorf("fieldOf(true) = %q, want \"\": booleans are too common to place", got)
	}
}

// TestUnreadFindsReplicaTypesNoComponentReads: a misspelt replica type is reported with its field; the
// replica types the RI reads, and a CR whose every entry is read, report nothing, and neither does any corpus
// sample the built-in RIs analyze.
func TestUnreadFindsReplicaTypesNoComponentReads(t *testing.T) {
	reg := builtinRegistry(t)
	obj := mustParseObject(t, `
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: job, namespace: ml}
spec:
  pytorchReplicaSpecs:
    Master: {replicas: 1, template: {spec: {containers: [{name: pytorch}]}}}
    Worker: {replicas: 2, template: {spec: {containers: [{name: pytorch}]}}}
    Workr: {replicas: 2, template: {spec: {containers: [{name: pytorch}]}}}`)
	c, _ := reg.Lookup(GVKOf(obj))
	unread, err := c.Unread(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(unread) != 1 || unread[0].Field != "spec.pytorchReplicaSpecs.Workr" || !strings.Contains(unread[0].Reason, "not counted") {
		t.Fatalf("unread = %v, want spec.pytorchReplicaSpecs.Workr alone", unread)
	}

	t.Run("corpus samples", func(t *testing.T) { unreadInCorpus(t, reg) })
}

func unreadInCorpus(t *testing.T, reg *Registry) {
	samples, _ := filepath.Glob(filepath.Join(corpusDir(t), "*", "samples", "*.yaml"))
	checked := 0
	for _, file := range samples {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		objects, err := ParseObjects(data, file)
		if err != nil {
			continue
		}
		for _, o := range objects {
			c, ok := reg.Lookup(GVKOf(o.Object))
			if !ok {
				continue
			}
			if _, err := c.Analyze(o.Object); err != nil {
				continue
			}
			checked++
			if unread, err := c.Unread(o.Object); err != nil || len(unread) > 0 {
				t.Errorf("%s: unread %v (%v), want nothing: the built-in RIs read every entry of the frameworks' samples", file, unread, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no corpus sample analyzed")
	}
}
