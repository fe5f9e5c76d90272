package app

import "testing"

// TestDefaultSkipped: fleetflow run leaves Kubernetes' own namespaces and its own alone, and no other namespace:
// not one that merely starts with "kube", and not the empty namespace of cluster-scoped workloads.
func TestDefaultSkipped(t *testing.T) {
	skipped := DefaultSkipped()
	for namespace, want := range map[string]bool{
		"kube-system": true, "kube-public": true, "kube-node-lease": true, SystemNamespace: true,
		"kubeflow": false, "team-a": false, "my-kube-system": false, "": false,
	} {
		if got := skipped.MatchString(namespace); got != want {
			t.Errorf("namespace %q skipped = %v, want %v", namespace, got, want)
		}
	}
	if none, err := SkippedNamespaces([]string{"", " "}); none != nil || err != nil {
		t.Errorf("no pattern: got %v, %v; want nil, which skips nothing", none, err)
	}
}
