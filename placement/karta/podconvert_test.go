package karta

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// decodeTemplateJSON is the reference: the template decoded through its JSON form, as the engine
// did before it converted templates directly.
func decodeTemplateJSON(v any, form specForm) (*corev1.PodTemplateSpec, error) {
	t := &corev1.PodTemplateSpec{}
	if form == specPodSpec {
		return t, decodeValue(v, &t.Spec)
	}
	return t, decodeValue(v, t)
}

// checkConvertMatchesJSON fails when convertTemplate accepts v but yields anything other than
// what the JSON decode yields. It reports whether the direct conversion took v.
func checkConvertMatchesJSON(t *testing.T, label string, v any, form specForm) bool {
	t.Helper()
	got, ok := convertTemplate(v, form)
	if !ok {
		return false
	}
	want, err := decodeTemplateJSON(v, form)
	if err != nil {
		t.Fatalf("%s: direct conversion accepted a template the JSON decode rejects (%v)", label, err)
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		t.Fatalf("%s: direct conversion differs from the JSON decode\n got %s\nwant %s\n(%#v\nvs %#v)", label, gj, wj, got, want)
	}
	return true
}

// templateValues runs the pod definition paths of every component of c on obj.
func templateValues(t *testing.T, c *Compiled, obj map[string]any) (values []any, forms []specForm) {
	t.Helper()
	ev := c.newEvaluation(obj)
	defer ev.release()
	for _, cc := range c.components {
		p := cc.templateProgram()
		if p == nil {
			continue
		}
		out, err := c.run(ev, cc.name, p)
		if err != nil {
			continue
		}
		for _, v := range out {
			if v != nil {
				values, forms = append(values, v), append(forms, cc.form)
			}
		}
	}
	return values, forms
}

func TestConvertTemplateMatchesJSONDecodeOnCorpus(t *testing.T) {
	reg := builtinRegistry(t)
	var seen, converted int
	for _, s := range corpusSamples(t) {
		c, ok := reg.Lookup(GVKOf(s.obj))
		if !ok {
			continue
		}
		values, forms := templateValues(t, c, s.obj)
		for i, v := range values {
			seen++
			if checkConvertMatchesJSON(t, s.file, v, forms[i]) {
				converted++
			}
		}
	}
	if seen == 0 {
		t.Skip("no corpus sample has a pod template a built-in RI reads")
	}
	t.Logf("%d of %d corpus templates converted directly, the rest through JSON", converted, seen)
}

func TestConvertTemplateMatchesJSONDecodeOnRayCluster64(t *testing.T) {
	obj := rayCluster64(t)
	c, _ := builtinRegistry(t).Lookup(GVKOf(obj))
	values, forms := templateValues(t, c, obj)
	if len(values) != 5 {
		t.Fatalf("got %d templates, want the head's and 4 worker groups'", len(values))
	}
	for i, v := range values {
		// These templates hold only fields the converter knows, so the fast path must take them:
		// it is what keeps the cold analysis within its budget.
		if !checkConvertMatchesJSON(t, "raycluster64", v, forms[i]) {
			t.Fatalf("template %d fell back to the JSON decode", i)
		}
	}
}

// convertCases cover each converted field, and the inputs where the converter must either agree
// with the JSON decode or leave the template to it: nulls, empty objects and lists, numeric
// quantities, escapes, invalid UTF-8, keys that differ only in case, unknown fields.
var convertCases = []struct {
	name     string
	form     specForm
	template string
	direct   bool // whether the converter is expected to take it
}{
	{"every converted field", specPodTemplate, `
metadata: {name: pod, generateName: g-, namespace: ns, labels: {a: b}, annotations: {c: d}, creationTimestamp: null}
spec:
  restartPolicy: Never
  serviceAccountName: sa
  schedulerName: s
  priorityClassName: high
  hostNetwork: true
  terminationGracePeriodSeconds: 30
  nodeSelector: {zone: a}
  overhead: {cpu: 250m}
  tolerations: [{key: k, operator: Equal, value: v, effect: NoExecute, tolerationSeconds: 60}, {operator: Exists}]
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: gpu, operator: In, values: [h100, a100]}]
          matchFields: [{key: metadata.name, operator: NotIn, values: [n1]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - {weight: 10, preference: {matchExpressions: [{key: z, operator: Exists}]}}
  initContainers:
  - {name: side, restartPolicy: Always, resources: {requests: {cpu: "1"}}}
  containers:
  - name: main
    image: img
    imagePullPolicy: IfNotPresent
    command: [sh, -c]
    args: ["echo \"hi\"\n"]
    workingDir: /w
    ports: [{name: http, containerPort: 8080, hostPort: 80, protocol: TCP, hostIP: 1.2.3.4}]
    env: [{name: A, value: "1"}, {name: B}]
    volumeMounts: [{name: v, mountPath: /m, subPath: s, readOnly: true}]
    resources: {requests: {cpu: 1500m, memory: 1Gi}, limits: {nvidia.com/gpu: 8, memory: 2e9, cpu: 0.5}}
`, true},
	{"pod spec form", specPodSpec, `{containers: [{name: c, resources: {limits: {cpu: "2"}}}]}`, true},
	{"empty objects and lists", specPodTemplate, `
metadata: {labels: {}}
spec: {containers: [], initContainers: [{name: i, resources: {}, env: []}], tolerations: [], nodeSelector: {}, overhead: {}, affinity: {nodeAffinity: {}}}
`, true},
	{"empty template", specPodTemplate, `{}`, true},
	{"quantity with spaces", specPodTemplate, `{spec: {containers: [{name: c, resources: {requests: {cpu: " 2 "}}}]}}`, true},
	{"large numeric quantity", specPodTemplate, `{spec: {containers: [{name: c, resources: {requests: {memory: 1e20}}}]}}`, true},
	{"quantity with an escaped tab", specPodTemplate, "{spec: {containers: [{name: c, resources: {requests: {cpu: \"\\t2\"}}}]}}", false},
	{"invalid quantity", specPodTemplate, `{spec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}}`, false},
	{"null quantity", specPodTemplate, `{spec: {containers: [{name: c, resources: {requests: {cpu: null}}}]}}`, false},
	{"null field", specPodTemplate, `{spec: {nodeSelector: null, containers: [{name: c}]}}`, false},
	{"key in another case", specPodTemplate, `{spec: {Containers: [{name: c}]}}`, false},
	{"unknown field", specPodTemplate, `{spec: {volumes: [{name: v, emptyDir: {}}], containers: [{name: c}]}}`, false},
	{"env from a secret", specPodTemplate, `{spec: {containers: [{name: c, env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}}`, false},
	{"pod affinity", specPodTemplate, `{spec: {affinity: {podAffinity: {}}}}`, false},
	{"fractional port", specPodTemplate, `{spec: {containers: [{name: c, ports: [{containerPort: 80.5}]}]}}`, false},
	{"port out of range", specPodTemplate, `{spec: {containers: [{name: c, ports: [{containerPort: 3000000000}]}]}}`, false},
	{"string where a list goes", specPodTemplate, `{spec: {containers: c}}`, false},
	{"not an object", specPodTemplate, `[1]`, false},
}

func TestConvertTemplateMatchesJSONDecode(t *testing.T) {
	for _, tc := range convertCases {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := yaml.Unmarshal([]byte(tc.template), &v); err != nil {
				t.Fatal(err)
			}
			if got := checkConvertMatchesJSON(t, tc.name, v, tc.form); got != tc.direct {
				t.Fatalf("converted directly: %v, want %v", got, tc.direct)
			}
		})
	}
	t.Run("invalid UTF-8 string", func(t *testing.T) {
		v := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c\xff"}}}}
		if checkConvertMatchesJSON(t, "invalid UTF-8", v, specPodTemplate) {
			t.Fatal("a name that is not UTF-8 must go through the JSON decode, which replaces the byte")
		}
	})
	t.Run("integers as gojq yields them", func(t *testing.T) {
		v := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "c", "ports": []any{map[string]any{"containerPort": 8080}},
			"resources": map[string]any{"limits": map[string]any{"cpu": 4}}}}}}
		if !checkConvertMatchesJSON(t, "ints", v, specPodTemplate) {
			t.Fatal("int values must convert directly")
		}
	})
}

// The quantity cache hands out copies: changing one quantity taken from it must not change the next.
func TestQuantityCacheCopies(t *testing.T) {
	big := "123456789012345678901234567890m" // too large for int64 milli-units: held as an inf.Dec
	q1, ok := convertQuantity(big)
	if !ok {
		t.Fatal("quantity rejected")
	}
	q1.Add(q1)
	q2, _ := convertQuantity(big)
	if q2.Cmp(q1) == 0 || q2.String() != "123456789012345678901234567890m" {
		t.Fatalf("cached quantity changed to %s", q2.String())
	}
}

// FuzzConvertTemplate: on any JSON value, the direct conversion either declines or equals the JSON decode.
func FuzzConvertTemplate(f *testing.F) {
	for _, tc := range convertCases {
		if data, err := yaml.YAMLToJSON([]byte(tc.template)); err == nil {
			f.Add(data, tc.form == specPodSpec)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, podSpec bool) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		form := specPodTemplate
		if podSpec {
			form = specPodSpec
		}
		checkConvertMatchesJSON(t, string(data), v, form)
	})
}

// Pod metadata read through a metadataPath converts directly too; it must equal the JSON decode.
func TestDecodeObjectMetaMatchesJSONDecode(t *testing.T) {
	for _, y := range []string{
		`{labels: {app: a}, annotations: {note: "x"}, name: pod}`,
		`{labels: {}, creationTimestamp: null}`,
		`{labels: {app: a}, ownerReferences: []}`, // not converted: decoded through JSON
		`{}`,
	} {
		var v any
		if err := yaml.Unmarshal([]byte(y), &v); err != nil {
			t.Fatal(err)
		}
		var got, want metav1.ObjectMeta
		if err := decodeObjectMeta(v, &got); err != nil {
			t.Fatalf("%s: %v", y, err)
		}
		if err := decodeValue(v, &want); err != nil {
			t.Fatalf("%s: %v", y, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: got %#v, want %#v", y, got, want)
		}
	}
}

func TestInternedResourceLists(t *testing.T) {
	gpus := map[string]any{"nvidia.com/gpu": "8", "cpu": "32"}
	var first, second corev1.ResourceList
	if !convertResourceList(gpus, &first) || !convertResourceList(map[string]any{"cpu": "32", "nvidia.com/gpu": "8"}, &second) {
		t.Fatal("resource list not converted")
	}
	if reflect.ValueOf(first).Pointer() != reflect.ValueOf(second).Pointer() {
		t.Fatal("two lists with the same quantities are not shared")
	}
	var other corev1.ResourceList
	if !convertResourceList(map[string]any{"nvidia.com/gpu": "4", "cpu": "32"}, &other) {
		t.Fatal("resource list not converted")
	}
	if q := other["nvidia.com/gpu"]; q.Value() != 4 {
		t.Fatalf("a list with other quantities got %s GPUs", q.String())
	}

	// A hash collision must not share a wrong list: plant an entry under this list's key whose
	// texts differ, as a colliding list would have.
	planted := map[string]any{"memory": "1Gi"}
	key, _ := listKey(planted)
	internedLists.mu.Lock()
	internedLists.entries[key] = internedList{source: map[string]string{"memory": "2Gi"}, list: corev1.ResourceList{}}
	internedLists.mu.Unlock()
	var got corev1.ResourceList
	if !convertResourceList(planted, &got) {
		t.Fatal("resource list not converted")
	}
	if q := got["memory"]; q.String() != "1Gi" {
		t.Fatalf("got %v, want memory 1Gi", got)
	}
}
