package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/fleetflow/fleetflow/cmd/fleetflow/app"
	"github.com/fleetflow/fleetflow/e2e/e2eenv"
	"github.com/fleetflow/fleetflow/internal/localfleet/localfleettest"
)

// TestKubectlGetShowsClustersAndPolicies: the table `kubectl get clusters` and `kubectl get schedulepolicies`
// print, as the control plane's apiserver renders it from the CRDs' printer columns: a Cluster's readiness and
// free CPU and GPUs (free memory with -o wide), and whether a policy was accepted (the reason with -o wide).
func TestKubectlGetShowsClustersAndPolicies(t *testing.T) {
	fleet := localfleettest.Fleet(t)
	controlPlane := e2eenv.ClientsFor(t, fleet.ControlPlane)
	ctx := t.Context()
	if err := app.InstallControlPlaneCRDs(ctx, controlPlane, e2eenv.FieldManager); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		group, resource, name string
		object, status        map[string]any
		want                  map[string]string
	}{
		{group: "fleetflow.io", resource: "clusters", name: "printed-cluster", object: map[string]any{"spec": map[string]any{
			"kubeconfigSecretRef": map[string]any{"name": "none", "namespace": app.SystemNamespace}}},
			status: map[string]any{
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Heartbeat", "message": "m",
					"lastTransitionTime": "2026-12-01T00:00:00Z"}},
				"free": map[string]any{"cpu": "12500m", "memory": "64Gi", "nvidia.com/gpu": "6"}},
			want: map[string]string{"Ready": "True", "Free CPU": "12500m", "Free GPU": "6", "Free Memory": "64Gi"}},
		{group: "fleetflow.io", resource: "schedulepolicies", name: "printed-policy", object: map[string]any{"spec": map[string]any{"priority": int64(5)}},
			status: map[string]any{"conditions": []any{map[string]any{"type": "Accepted", "status": "False", "reason": "Invalid",
				"message": "m", "lastTransitionTime": "2026-12-01T00:00:00Z"}}},
			want: map[string]string{"Priority": "5", "Accepted": "False", "Reason": "Invalid"}},
		{group: "optimization.nvidia.com", resource: "resourceinterfaces", name: "printed-ri", object: map[string]any{"spec": map[string]any{
			"structureDefinition": map[string]any{"rootComponent": map[string]any{"name": "widget",
				"kind": map[string]any{"group": "example.com", "version": "v1", "kind": "Widget"}}}}},
			status: map[string]any{"conditions": []any{map[string]any{"type": "Accepted", "status": "True", "reason": "InForce",
				"message": "in force for Widget.example.com/v1", "lastTransitionTime": "2026-12-01T00:00:00Z"}}},
			want: map[string]string{"Kind": "Widget", "Group": "example.com", "Accepted": "True", "Reason": "InForce",
				"Message": "in force for Widget.example.com/v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			gvr := schema.GroupVersionResource{Group: tt.group, Version: "v1alpha1", Resource: tt.resource}
			kind := map[string]string{"clusters": "Cluster", "schedulepolicies": "SchedulePolicy", "resourceinterfaces": "ResourceInterface"}[tt.resource]
			obj := &unstructured.Unstructured{Object: tt.object}
			obj.SetAPIVersion(tt.group + "/v1alpha1")
			obj.SetKind(kind)
			obj.SetName(tt.name)
			created, err := controlPlane.Dynamic.Resource(gvr).Create(ctx, obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = controlPlane.Dynamic.Resource(gvr).Delete(context.Background(), tt.name, metav1.DeleteOptions{})
			})
			created.Object["status"] = tt.status
			if _, err := controlPlane.Dynamic.Resource(gvr).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			raw, err := controlPlane.Core.Discovery().RESTClient().Get().AbsPath("/apis", tt.group, "v1alpha1", tt.resource, tt.name).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var table metav1.Table
			if err := json.Unmarshal(raw, &table); err != nil {
				t.Fatal(err)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("table has %d rows, want 1: %s", len(table.Rows), raw)
			}
			var columns []string
			for i, column := range table.ColumnDefinitions {
				columns = append(columns, column.Name)
				want, checked := tt.want[column.Name]
				if got := fmt.Sprint(table.Rows[0].Cells[i]); checked && got != want {
					t.Errorf("column %s = %v, want %s", column.Name, got, want)
				}
			}
			for name := range tt.want {
				if !slices.Contains(columns, name) {
					t.Errorf("no column %s in %v", name, columns)
				}
			}
		})
	}
}

// TestKubectlGetFleetflowListsEveryKind: every fleetflow kind is in the fleetflow category (`kubectl get
// fleetflow`), with short names that leave Karmada's and Cluster API's clusters alone.
func TestKubectlGetFleetflowListsEveryKind(t *testing.T) {
	fleet := localfleettest.Fleet(t)
	controlPlane := e2eenv.ClientsFor(t, fleet.ControlPlane)
	if err := app.InstallControlPlaneCRDs(t.Context(), controlPlane, e2eenv.FieldManager); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"clusters": {"fcl"}, "schedulepolicies": {"sp"}, "workloadplacements": {"wlp"}, "resourceinterfaces": {"ri"}}
	for _, groupVersion := range []string{"fleetflow.io/v1alpha1", "optimization.nvidia.com/v1alpha1"} {
		list, err := controlPlane.Core.Discovery().ServerResourcesForGroupVersion(groupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range list.APIResources {
			shortNames, ours := want[r.Name]
			if !ours {
				continue
			}
			delete(want, r.Name)
			if !slices.Contains(r.Categories, "fleetflow") || !slices.Equal(r.ShortNames, shortNames) {
				t.Errorf("%s: categories %v, short names %v; want fleetflow and %v", r.Name, r.Categories, r.ShortNames, shortNames)
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("not served: %v", want)
	}
}
