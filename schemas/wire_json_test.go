package schemas

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

// plainVerdict and plainDecided have the payloads' fields without their MarshalJSON, so encoding/json
// writes them by reflection: the reference the hand-written encodings must equal.
type (
	plainVerdict PlacementVerdict
	plainDecided PlacementDecided
)

// wireString draws names and texts, including characters JSON escapes.
func wireString(t *rapid.T, label string) string {
	return rapid.OneOf(rapid.SampledFrom([]string{"", "east", "gpu-west", `needs "nvidia.com/gpu" 8 <in total> & more`,
		"tab\there\nnewline", "ünï\u2028"}), rapid.String()).Draw(t, label)
}

func wireStringMap(t *rapid.T, label string) map[string]string {
	n := rapid.IntRange(0, 4).Draw(t, label+"Len")
	if n == 0 && rapid.Bool().Draw(t, label+"Nil") {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		m[wireString(t, label+"Key")] = wireString(t, label+"Value")
	}
	return m
}

func wireResources(t *rapid.T, label string) corev1.ResourceList {
	n := rapid.IntRange(0, 3).Draw(t, label+"Len")
	list := corev1.ResourceList{}
	for range n {
		name := rapid.SampledFrom([]string{"cpu", "memory", "nvidia.com/gpu", "pods"}).Draw(t, label+"Name")
		list[corev1.ResourceName(name)] = resource.MustParse(rapid.SampledFrom([]string{"0", "1", "250m", "64Gi", "1.5", "8"}).Draw(t, label+"Quantity"))
	}
	return list
}

func wireRef(t *rapid.T) ObjectRef {
	return ObjectRef{APIVersion: wireString(t, "apiVersion"), Kind: wireString(t, "kind"), Namespace: wireString(t, "namespace"),
		Name: wireString(t, "name"), UID: wireString(t, "uid")}
}

func TestVerdictJSONMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := &PlacementVerdict{Workload: wireRef(t), Sequence: rapid.Uint64().Draw(t, "sequence"), Epoch: wireString(t, "epoch"),
			Status: VerdictStatus(wireString(t, "status")), Policy: wireString(t, "policy"),
			Reasons: wireStringMap(t, "reasons"), ReasonCodes: wireStringMap(t, "codes"), Message: wireString(t, "message"),
			ViewSequence: rapid.Uint64().Draw(t, "view")}
		if rapid.Bool().Draw(t, "codesForReasons") {
			// The placer's shape: a code for every rejected cluster, the encoding's shared-keys path.
			v.ReasonCodes = map[string]string{}
			for c := range v.Reasons {
				v.ReasonCodes[c] = wireString(t, "code")
			}
		}
		for range rapid.IntRange(0, 3).Draw(t, "clusters") {
			v.Clusters = append(v.Clusters, wireString(t, "cluster"))
		}
		if rapid.Bool().Draw(t, "divided") {
			v.Replicas = map[string]int32{}
			for range rapid.IntRange(0, 3).Draw(t, "replicas") {
				v.Replicas[wireString(t, "replicaCluster")] = rapid.Int32().Draw(t, "replicaCount")
			}
		}
		if rapid.Bool().Draw(t, "analyzed") {
			a := &Analysis{ResourceInterface: wireString(t, "ri"), TotalPods: rapid.Int64().Draw(t, "pods"),
				TotalRequests: wireResources(t, "total"), Error: wireString(t, "error")}
			for range rapid.IntRange(0, 3).Draw(t, "components") {
				a.Components = append(a.Components, AnalyzedComponent{Name: wireString(t, "component"),
					Instance: wireString(t, "instance"), Pods: rapid.Int64().Draw(t, "componentPods"), PodRequests: wireResources(t, "pod")})
			}
			v.Analysis = a
		}
		want, err := json.Marshal((*plainVerdict)(v))
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("appendJSON  = %s\nencoding/json = %s", got, want)
		}
	})
}

func TestDecidedJSONMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := &PlacementDecided{DecisionID: wireString(t, "id"), Workload: wireRef(t), Cluster: wireString(t, "cluster"),
			Action: DecisionAction(wireString(t, "action")), Sequence: rapid.Uint64().Draw(t, "sequence"),
			Epoch: wireString(t, "epoch"), Replicas: rapid.Int64().Draw(t, "replicas"), Policy: wireString(t, "policy"),
			Reason: wireString(t, "reason")}
		if rapid.Bool().Draw(t, "placement") {
			d.Clusters = append([]string{d.Cluster}, wireString(t, "otherCluster"))
			d.Avoid = wireStringMap(t, "avoid")
			d.NamespaceLabels = wireStringMap(t, "namespaceLabels")
			d.SourceContent = wireString(t, "sourceContent")
			d.Pins = wireString(t, "pins")
		}
		if rapid.Bool().Draw(t, "carriesVerdict") {
			d.Verdict = &PlacementVerdict{Workload: d.Workload, Sequence: d.Sequence, Epoch: d.Epoch, Status: VerdictPlaced,
				Policy: d.Policy, Clusters: []string{d.Cluster}, Reasons: wireStringMap(t, "verdictReasons"),
				ViewSequence: rapid.Uint64().Draw(t, "verdictView")}
		}
		if rapid.Bool().Draw(t, "hasObject") {
			d.Object = map[string]any{"apiVersion": wireString(t, "objectAPIVersion"),
				"metadata": map[string]any{"name": wireString(t, "objectName"), "labels": map[string]any{"a": "b"}},
				"spec":     map[string]any{"replicas": float64(rapid.IntRange(0, 10).Draw(t, "specReplicas")), "paused": false}}
		}
		want, err := json.Marshal((*plainDecided)(d))
		if err != nil {
			t.Fatal(err)
		}
		got, err := d.appendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("appendJSON  = %s\nencoding/json = %s", got, want)
		}
		// Sent pre-encoded, the object is written where encoding/json writes it.
		if d.Object != nil {
			d.ObjectJSON, _ = json.Marshal(d.Object)
			d.Object = nil
			if got, _ := d.appendJSON(nil); string(got) != string(want) {
				t.Fatalf("with ObjectJSON = %s\nencoding/json   = %s", got, want)
			}
		}
	})
}
