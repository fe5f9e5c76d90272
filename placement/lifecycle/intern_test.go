package lifecycle

import (
	"maps"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
)

// TestInterningSharesEqualStrings: two nodes decoded from two events carry equal labels in separate strings;
// once interned they hold the same strings, and the maps and slices handed out are new ones. A label valued as
// the node's name holds the name's string.
func TestInterningSharesEqualStrings(t *testing.T) {
	// Built at run time so each node's strings are separate allocations, as decoding makes them.
	decoded := func(zone string) map[string]string {
		return map[string]string{string([]byte("topology.kubernetes.io/zone")): string([]byte(zone))}
	}
	first, second := decoded("eu-west-1a"), decoded("eu-west-1a")
	a, b := internLabels(first, "node-a"), internLabels(second, "node-b")
	if !maps.Equal(a, first) || !maps.Equal(b, second) {
		t.Fatalf("interned labels %v and %v differ from %v", a, b, first)
	}
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	for k, v := range a {
		var bk string
		for kb := range b {
			bk = kb
		}
		if !same(k, bk) || !same(v, b[bk]) {
			t.Errorf("label %s=%s is not shared between the two nodes", k, v)
		}
	}
	a["changed"] = "x"
	if _, ok := first["changed"]; ok {
		t.Error("the interned map is the decoded one; it must be a copy")
	}

	taints := []corev1.Taint{{Key: string([]byte("nvidia.com/gpu")), Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	got := internTaints(taints)
	if len(got) != 1 || got[0] != taints[0] {
		t.Fatalf("interned taints = %v, want %v", got, taints)
	}
	if again := internTaints([]corev1.Taint{{Key: string([]byte("nvidia.com/gpu")), Value: "present",
		Effect: corev1.TaintEffectNoSchedule}}); !same(again[0].Key, got[0].Key) {
		t.Error("equal taint keys are not shared")
	}
	name := string([]byte("node-1"))
	if host := internLabels(map[string]string{"kubernetes.io/hostname": string([]byte("node-1"))}, name); !same(host["kubernetes.io/hostname"], name) {
		t.Error("a label valued as the node's name does not share the name's string")
	}
	if internLabels(nil, "node-a") != nil || internTaints(nil) != nil || internString("") != "" {
		t.Error("nothing interned should stay nothing")
	}
}
