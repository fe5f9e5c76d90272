package karta

import (
	"fmt"
	"testing"
)

// TestBuiltinDivisibility: of the built-in kinds, only those with a single pod-bearing component whose replica
// count is a plain field can be split by Divide: Deployment and StatefulSet. The training and serving
// frameworks have several components (PyTorchJob, RayCluster, LeaderWorkerSet, ...) or per-instance ones
// (JobSet, DynamoGraphDeployment), and NIMService computes its replicas.
func TestBuiltinDivisibility(t *testing.T) {
	reg := builtinRegistry(t)
	divisible := map[string]bool{"apps/Deployment": true, "apps/StatefulSet": true}
	for _, c := range reg.All() {
		key := c.GVK.Group + "/" + c.GVK.Kind
		if got := c.Divisible(); got != divisible[key] {
			t.Errorf("%s: Divisible() = %v, want %v", c.GVK, got, divisible[key])
		}
		got, known := reg.DivisibleGroupKind(c.GVK.Group, c.GVK.Kind)
		if !known || got != divisible[key] {
			t.Errorf("%s: DivisibleGroupKind = %v, %v; want %v, true", key, got, known, divisible[key])
		}
	}
	if d, known := reg.DivisibleGroupKind("example.com", "Nothing"); d || known {
		t.Errorf("a kind without an RI: divisible %v, known %v", d, known)
	}
}

// TestDivisibleFollowsTheReplicasPath: one pod-bearing component is divisible when its replicas path is a
// plain field, with or without a default, and not when the path iterates or the component has instances.
func TestDivisibleFollowsTheReplicasPath(t *testing.T) {
	tests := []struct {
		scale      string
		instanceID string
		want       bool
	}{
		{scale: `{replicasPath: '.spec.replicas'}`, want: true},
		{scale: `{replicasPath: '.spec.replicas // 1'}`, want: true},
		{scale: `{replicasPath: '.spec.groups[].replicas'}`},
		{scale: `{replicasPath: '.spec.replicas * 2'}`},
		{scale: `{minReplicasPath: '.spec.min'}`},
		{scale: `{replicasPath: '.spec.replicas'}`, instanceID: `'.spec.name'`},
	}
	for _, tt := range tests {
		t.Run(tt.scale+tt.instanceID, func(t *testing.T) {
			instance := ""
			if tt.instanceID != "" {
				instance = "\n      instanceIdPath: " + tt.instanceID
			}
			c := compileRI(t, fmt.Sprintf(`
apiVersion: optimization.nvidia.com/v1alpha1
kind: ResourceInterface
metadata: {name: ri}
spec:
  structureDefinition:
    rootComponent: {name: root, kind: {group: example.com, version: v1, kind: Server}}
    childComponents:
    - name: pods
      ownerRef: root
      specDefinition: {podTemplateSpecPath: '.spec.template'}
      scaleDefinition: %s%s
`, tt.scale, instance))
			if got := c.Divisible(); got != tt.want {
				t.Errorf("Divisible() = %v, want %v", got, tt.want)
			}
		})
	}
}
