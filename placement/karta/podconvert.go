package karta

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Decoding a template through JSON (write it, then let the API types read it back) is most of a
// cold analysis. convertTemplate builds the API types straight from the jq value instead, for the
// fields pod templates commonly carry. It gives up (ok false) on anything it does not know exactly
// how the JSON decode would treat: an unknown or differently-cased key, a null, a value of an
// unexpected type, a string that is not valid UTF-8. The caller then decodes through JSON, so the
// result is always the JSON decode's; TestConvertTemplateMatchesJSONDecode holds the two equal.

// convertTemplate converts a pod template (or, for specPodSpec, a PodSpec).
func convertTemplate(v any, form specForm) (*corev1.PodTemplateSpec, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	t := &corev1.PodTemplateSpec{}
	if form == specPodSpec {
		return t, convertPodSpec(m, &t.Spec)
	}
	f := objectFields{m: m}
	ok = field(&f, "spec", &t.Spec, objectOf(convertPodSpec)) &&
		field(&f, "metadata", &t.ObjectMeta, objectOf(convertObjectMeta)) &&
		f.complete()
	return t, ok
}

// objectFields reads a JSON object by looking up the fields a converter knows (cheaper than
// iterating a map, which starts at a random position). The object converts only when every one of
// its keys was found that way: any other key, one in another case included (the JSON decode
// matches those case-insensitively), leaves the template to the JSON decode.
type objectFields struct {
	m     map[string]any
	found int
}

func (f *objectFields) complete() bool { return f.found == len(f.m) }

// field converts m[key] into dst with conv when the object has that key.
func field[T any](f *objectFields, key string, dst *T, conv func(any, *T) bool) bool {
	if f.found == len(f.m) {
		return true
	}
	e, ok := f.m[key]
	if !ok {
		return true
	}
	f.found++
	return conv(e, dst)
}

// objectOf adapts an object converter to a field value, which must be an object.
func objectOf[T any](each func(map[string]any, *T) bool) func(any, *T) bool {
	return func(v any, dst *T) bool {
		m, ok := v.(map[string]any)
		return ok && each(m, dst)
	}
}

// pointerTo adapts an object converter to a pointer field; the JSON decode allocates it even for {}.
func pointerTo[T any](each func(map[string]any, *T) bool) func(any, **T) bool {
	return func(v any, dst **T) bool {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		*dst = new(T)
		return each(m, *dst)
	}
}

// listOf adapts an object converter to an array field; [] becomes an empty, non-nil slice as in
// the JSON decode.
func listOf[T any](each func(map[string]any, *T) bool) func(any, *[]T) bool {
	return func(v any, dst *[]T) bool {
		arr, ok := v.([]any)
		if !ok {
			return false
		}
		out := make([]T, len(arr))
		for i, e := range arr {
			m, ok := e.(map[string]any)
			if !ok || !each(m, &out[i]) {
				return false
			}
		}
		*dst = out
		return true
	}
}

func convertObjectMeta(m map[string]any, meta *metav1.ObjectMeta) bool {
	f := objectFields{m: m}
	return field(&f, "labels", &meta.Labels, convertStringMap) &&
		field(&f, "annotations", &meta.Annotations, convertStringMap) &&
		field(&f, "name", &meta.Name, convertString) &&
		field(&f, "generateName", &meta.GenerateName, convertString) &&
		field(&f, "namespace", &meta.Namespace, convertString) &&
		// kubectl and controller-gen write creationTimestamp: null; it decodes to the zero time.
		field(&f, "creationTimestamp", &meta.CreationTimestamp, convertNullTime) &&
		f.complete()
}

func convertNullTime(v any, _ *metav1.Time) bool { return v == nil }

func convertPodSpec(m map[string]any, spec *corev1.PodSpec) bool {
	f := objectFields{m: m}
	return field(&f, "containers", &spec.Containers, listOf(convertContainer)) &&
		field(&f, "initContainers", &spec.InitContainers, listOf(convertContainer)) &&
		field(&f, "nodeSelector", &spec.NodeSelector, convertStringMap) &&
		field(&f, "tolerations", &spec.Tolerations, listOf(convertToleration)) &&
		field(&f, "affinity", &spec.Affinity, pointerTo(convertAffinity)) &&
		field(&f, "overhead", &spec.Overhead, convertResourceList) &&
		field(&f, "restartPolicy", &spec.RestartPolicy, convertStringAs[corev1.RestartPolicy]) &&
		field(&f, "serviceAccountName", &spec.ServiceAccountName, convertString) &&
		field(&f, "schedulerName", &spec.SchedulerName, convertString) &&
		field(&f, "priorityClassName", &spec.PriorityClassName, convertString) &&
		field(&f, "hostNetwork", &spec.HostNetwork, convertBool) &&
		field(&f, "terminationGracePeriodSeconds", &spec.TerminationGracePeriodSeconds, convertInt64Ptr) &&
		f.complete()
}

func convertContainer(m map[string]any, c *corev1.Container) bool {
	f := objectFields{m: m}
	return field(&f, "name", &c.Name, convertString) &&
		field(&f, "image", &c.Image, convertString) &&
		field(&f, "resources", &c.Resources, objectOf(convertResources)) &&
		field(&f, "command", &c.Command, convertStrings) &&
		field(&f, "args", &c.Args, convertStrings) &&
		field(&f, "env", &c.Env, listOf(convertEnvVar)) &&
		field(&f, "ports", &c.Ports, listOf(convertContainerPort)) &&
		field(&f, "volumeMounts", &c.VolumeMounts, listOf(convertVolumeMount)) &&
		field(&f, "imagePullPolicy", &c.ImagePullPolicy, convertStringAs[corev1.PullPolicy]) &&
		field(&f, "workingDir", &c.WorkingDir, convertString) &&
		field(&f, "restartPolicy", &c.RestartPolicy, convertContainerRestartPolicy) &&
		f.complete()
}

func convertContainerRestartPolicy(v any, dst **corev1.ContainerRestartPolicy) bool {
	var p corev1.ContainerRestartPolicy
	if !convertStringAs(v, &p) {
		return false
	}
	*dst = &p
	return true
}

func convertResources(m map[string]any, r *corev1.ResourceRequirements) bool {
	f := objectFields{m: m}
	return field(&f, "requests", &r.Requests, convertResourceList) &&
		field(&f, "limits", &r.Limits, convertResourceList) &&
		f.complete()
}

func convertContainerPort(m map[string]any, p *corev1.ContainerPort) bool {
	f := objectFields{m: m}
	return field(&f, "containerPort", &p.ContainerPort, convertInt32) &&
		field(&f, "name", &p.Name, convertString) &&
		field(&f, "protocol", &p.Protocol, convertStringAs[corev1.Protocol]) &&
		field(&f, "hostPort", &p.HostPort, convertInt32) &&
		field(&f, "hostIP", &p.HostIP, convertString) &&
		f.complete()
}

func convertEnvVar(m map[string]any, ev *corev1.EnvVar) bool {
	f := objectFields{m: m}
	return field(&f, "name", &ev.Name, convertString) &&
		field(&f, "value", &ev.Value, convertString) &&
		f.complete()
}

func convertVolumeMount(m map[string]any, vm *corev1.VolumeMount) bool {
	f := objectFields{m: m}
	return field(&f, "name", &vm.Name, convertString) &&
		field(&f, "mountPath", &vm.MountPath, convertString) &&
		field(&f, "subPath", &vm.SubPath, convertString) &&
		field(&f, "readOnly", &vm.ReadOnly, convertBool) &&
		f.complete()
}

func convertToleration(m map[string]any, t *corev1.Toleration) bool {
	f := objectFields{m: m}
	return field(&f, "key", &t.Key, convertString) &&
		field(&f, "operator", &t.Operator, convertStringAs[corev1.TolerationOperator]) &&
		field(&f, "value", &t.Value, convertString) &&
		field(&f, "effect", &t.Effect, convertStringAs[corev1.TaintEffect]) &&
		field(&f, "tolerationSeconds", &t.TolerationSeconds, convertInt64Ptr) &&
		f.complete()
}

func convertAffinity(m map[string]any, a *corev1.Affinity) bool {
	f := objectFields{m: m}
	return field(&f, "nodeAffinity", &a.NodeAffinity, pointerTo(convertNodeAffinity)) && f.complete()
}

func convertNodeAffinity(m map[string]any, na *corev1.NodeAffinity) bool {
	f := objectFields{m: m}
	return field(&f, "requiredDuringSchedulingIgnoredDuringExecution",
		&na.RequiredDuringSchedulingIgnoredDuringExecution, pointerTo(convertNodeSelector)) &&
		field(&f, "preferredDuringSchedulingIgnoredDuringExecution",
			&na.PreferredDuringSchedulingIgnoredDuringExecution, listOf(convertPreferredTerm)) &&
		f.complete()
}

func convertNodeSelector(m map[string]any, ns *corev1.NodeSelector) bool {
	f := objectFields{m: m}
	return field(&f, "nodeSelectorTerms", &ns.NodeSelectorTerms, listOf(convertNodeSelectorTerm)) && f.complete()
}

func convertPreferredTerm(m map[string]any, p *corev1.PreferredSchedulingTerm) bool {
	f := objectFields{m: m}
	return field(&f, "weight", &p.Weight, convertInt32) &&
		field(&f, "preference", &p.Preference, objectOf(convertNodeSelectorTerm)) &&
		f.complete()
}

func convertNodeSelectorTerm(m map[string]any, t *corev1.NodeSelectorTerm) bool {
	f := objectFields{m: m}
	return field(&f, "matchExpressions", &t.MatchExpressions, listOf(convertNodeSelectorRequirement)) &&
		field(&f, "matchFields", &t.MatchFields, listOf(convertNodeSelectorRequirement)) &&
		f.complete()
}

func convertNodeSelectorRequirement(m map[string]any, r *corev1.NodeSelectorRequirement) bool {
	f := objectFields{m: m}
	return field(&f, "key", &r.Key, convertString) &&
		field(&f, "operator", &r.Operator, convertStringAs[corev1.NodeSelectorOperator]) &&
		field(&f, "values", &r.Values, convertStrings) &&
		f.complete()
}

// convertString accepts only valid UTF-8: the JSON path turns invalid bytes into U+FFFD.
func convertString(v any, dst *string) bool {
	s, ok := v.(string)
	if !ok || !utf8.ValidString(s) {
		return false
	}
	*dst = s
	return true
}

func convertStringAs[S ~string](v any, dst *S) bool {
	var s string
	if !convertString(v, &s) {
		return false
	}
	*dst = S(s)
	return true
}

func convertStrings(v any, dst *[]string) bool {
	arr, ok := v.([]any)
	if !ok {
		return false
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		if !convertString(e, &out[i]) {
			return false
		}
	}
	*dst = out
	return true
}

func convertStringMap(v any, dst *map[string]string) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		var s string
		if !utf8.ValidString(k) || !convertString(e, &s) {
			return false
		}
		out[k] = s
	}
	*dst = out
	return true
}

func convertBool(v any, dst *bool) bool {
	b, ok := v.(bool)
	*dst = b
	return ok
}

// wholeNumber is v when it is an integer that appendJSON writes in plain digits.
func wholeNumber(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return int64(x), true
		}
	}
	return 0, false
}

func convertInt32(v any, dst *int32) bool {
	n, ok := wholeNumber(v)
	if !ok || n < math.MinInt32 || n > math.MaxInt32 {
		return false
	}
	*dst = int32(n)
	return true
}

func convertInt64Ptr(v any, dst **int64) bool {
	n, ok := wholeNumber(v)
	if !ok {
		return false
	}
	*dst = &n
	return true
}

func convertResourceList(v any, dst *corev1.ResourceList) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	if list, ok := internedLists.get(m); ok {
		*dst = list
		return true
	}
	out := make(corev1.ResourceList, len(m))
	for k, e := range m {
		q, ok := convertQuantity(e)
		if !ok || !utf8.ValidString(k) {
			return false
		}
		out[corev1.ResourceName(k)] = q
	}
	internedLists.put(m, out)
	*dst = out
	return true
}

// Resource lists repeat: every group of a CR, and most CRs, ask for the same few shapes ("8 GPUs,
// 32 CPUs, 256Gi"). A converted list is a map of quantities, several hundred bytes that the
// garbage collector then scans, so lists are interned by content and shared. Sharing is safe for
// the same reason the template cache is: an Analysis and its pod templates are immutable.

const internedListsSize = 1024

type internedList struct {
	source map[string]string // the quantity texts the list was converted from
	list   corev1.ResourceList
}

type resourceListInterner struct {
	mu      sync.Mutex
	entries map[uint64]internedList
}

var internedLists = &resourceListInterner{entries: map[uint64]internedList{}}

// listKey hashes a jq resource list whose values are all quantity strings; ok is false otherwise,
// and such lists are converted each time.
func listKey(m map[string]any) (key uint64, ok bool) {
	for k, e := range m {
		s, isString := e.(string)
		if !isString {
			return 0, false
		}
		// Addition keeps the key independent of map iteration order.
		key += mix(maphash.String(hashSeed, k), maphash.String(hashSeed, s))
	}
	return mix(key, uint64(len(m))), true
}

func (r *resourceListInterner) get(m map[string]any) (corev1.ResourceList, bool) {
	key, ok := listKey(m)
	if !ok {
		return nil, false
	}
	r.mu.Lock()
	e, found := r.entries[key]
	r.mu.Unlock()
	// The hash only finds the candidate; the texts decide, so a collision cannot share a wrong list.
	if !found || len(e.source) != len(m) {
		return nil, false
	}
	for k, v := range m {
		if text, ok := e.source[k]; !ok || text != v.(string) {
			return nil, false
		}
	}
	return e.list, true
}

func (r *resourceListInterner) put(m map[string]any, list corev1.ResourceList) {
	key, ok := listKey(m)
	if !ok {
		return
	}
	source := make(map[string]string, len(m))
	for k, v := range m {
		source[k] = v.(string)
	}
	r.mu.Lock()
	if len(r.entries) >= internedListsSize {
		clear(r.entries)
	}
	r.entries[key] = internedList{source: source, list: list}
	r.mu.Unlock()
}

// convertQuantity parses a quantity as Quantity.UnmarshalJSON would from appendJSON's output. A
// string goes to UnmarshalJSON with its JSON escapes still in, so only strings that appendJSON
// writes verbatim take this path.
func convertQuantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		for i := 0; i < len(x); i++ {
			if c := x[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return resource.Quantity{}, false
			}
		}
		s = x
	case int, float64:
		var buf [32]byte
		data, err := appendJSON(buf[:0], x)
		if err != nil {
			return resource.Quantity{}, false
		}
		s = string(data)
	default:
		return resource.Quantity{}, false
	}
	return parsedQuantities.parse(strings.TrimSpace(s))
}

// quantityCache keeps parsed quantities by their text: templates repeat the same few ("8", "32Gi").
// It hands out deep copies, since a Quantity holding an inf.Dec is changed in place by Add.
type quantityCache struct {
	mu      sync.Mutex
	entries map[string]resource.Quantity
}

const quantityCacheSize = 1024

var parsedQuantities = &quantityCache{entries: map[string]resource.Quantity{}}

func (qc *quantityCache) parse(s string) (resource.Quantity, bool) {
	qc.mu.Lock()
	q, ok := qc.entries[s]
	qc.mu.Unlock()
	if ok {
		return q.DeepCopy(), true
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, false
	}
	qc.mu.Lock()
	if len(qc.entries) >= quantityCacheSize {
		clear(qc.entries)
	}
	qc.entries[s] = q.DeepCopy()
	qc.mu.Unlock()
	return q, true
}
