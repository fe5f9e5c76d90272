package karta

import (
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
	for k, e := range m {
		var ok bool
		switch k {
		case "metadata":
			ok = convertObject(e, &t.ObjectMeta, convertObjectMeta)
		case "spec":
			ok = convertObject(e, &t.Spec, convertPodSpec)
		}
		if !ok {
			return nil, false
		}
	}
	return t, true
}

func convertObject[T any](v any, dst *T, each func(map[string]any, *T) bool) bool {
	m, ok := v.(map[string]any)
	return ok && each(m, dst)
}

// convertObjectPtr fills a pointer field; the JSON decode allocates it even for {}.
func convertObjectPtr[T any](v any, dst **T, each func(map[string]any, *T) bool) bool {
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	*dst = new(T)
	return each(m, *dst)
}

// convertList converts an array of objects; [] becomes an empty, non-nil slice as in the JSON decode.
func convertList[T any](v any, dst *[]T, each func(map[string]any, *T) bool) bool {
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

func convertObjectMeta(m map[string]any, meta *metav1.ObjectMeta) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "name":
			ok = convertString(e, &meta.Name)
		case "generateName":
			ok = convertString(e, &meta.GenerateName)
		case "namespace":
			ok = convertString(e, &meta.Namespace)
		case "labels":
			ok = convertStringMap(e, &meta.Labels)
		case "annotations":
			ok = convertStringMap(e, &meta.Annotations)
		case "creationTimestamp":
			// kubectl and controller-gen write creationTimestamp: null; it decodes to the zero time.
			ok = e == nil
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertPodSpec(m map[string]any, spec *corev1.PodSpec) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "containers":
			ok = convertList(e, &spec.Containers, convertContainer)
		case "initContainers":
			ok = convertList(e, &spec.InitContainers, convertContainer)
		case "nodeSelector":
			ok = convertStringMap(e, &spec.NodeSelector)
		case "tolerations":
			ok = convertList(e, &spec.Tolerations, convertToleration)
		case "affinity":
			ok = convertObjectPtr(e, &spec.Affinity, convertAffinity)
		case "overhead":
			ok = convertResourceList(e, &spec.Overhead)
		case "restartPolicy":
			ok = convertStringAs(e, &spec.RestartPolicy)
		case "serviceAccountName":
			ok = convertString(e, &spec.ServiceAccountName)
		case "schedulerName":
			ok = convertString(e, &spec.SchedulerName)
		case "priorityClassName":
			ok = convertString(e, &spec.PriorityClassName)
		case "hostNetwork":
			ok = convertBool(e, &spec.HostNetwork)
		case "terminationGracePeriodSeconds":
			ok = convertInt64Ptr(e, &spec.TerminationGracePeriodSeconds)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertContainer(m map[string]any, c *corev1.Container) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "name":
			ok = convertString(e, &c.Name)
		case "image":
			ok = convertString(e, &c.Image)
		case "command":
			ok = convertStrings(e, &c.Command)
		case "args":
			ok = convertStrings(e, &c.Args)
		case "workingDir":
			ok = convertString(e, &c.WorkingDir)
		case "imagePullPolicy":
			ok = convertStringAs(e, &c.ImagePullPolicy)
		case "restartPolicy":
			var p corev1.ContainerRestartPolicy
			if ok = convertStringAs(e, &p); ok {
				c.RestartPolicy = &p
			}
		case "resources":
			ok = convertObject(e, &c.Resources, convertResources)
		case "ports":
			ok = convertList(e, &c.Ports, convertContainerPort)
		case "env":
			ok = convertList(e, &c.Env, convertEnvVar)
		case "volumeMounts":
			ok = convertList(e, &c.VolumeMounts, convertVolumeMount)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertResources(m map[string]any, r *corev1.ResourceRequirements) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "requests":
			ok = convertResourceList(e, &r.Requests)
		case "limits":
			ok = convertResourceList(e, &r.Limits)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertContainerPort(m map[string]any, p *corev1.ContainerPort) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "name":
			ok = convertString(e, &p.Name)
		case "containerPort":
			ok = convertInt32(e, &p.ContainerPort)
		case "hostPort":
			ok = convertInt32(e, &p.HostPort)
		case "protocol":
			ok = convertStringAs(e, &p.Protocol)
		case "hostIP":
			ok = convertString(e, &p.HostIP)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertEnvVar(m map[string]any, ev *corev1.EnvVar) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "name":
			ok = convertString(e, &ev.Name)
		case "value":
			ok = convertString(e, &ev.Value)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertVolumeMount(m map[string]any, vm *corev1.VolumeMount) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "name":
			ok = convertString(e, &vm.Name)
		case "mountPath":
			ok = convertString(e, &vm.MountPath)
		case "subPath":
			ok = convertString(e, &vm.SubPath)
		case "readOnly":
			ok = convertBool(e, &vm.ReadOnly)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertToleration(m map[string]any, t *corev1.Toleration) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "key":
			ok = convertString(e, &t.Key)
		case "operator":
			ok = convertStringAs(e, &t.Operator)
		case "value":
			ok = convertString(e, &t.Value)
		case "effect":
			ok = convertStringAs(e, &t.Effect)
		case "tolerationSeconds":
			ok = convertInt64Ptr(e, &t.TolerationSeconds)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertAffinity(m map[string]any, a *corev1.Affinity) bool {
	for k, e := range m {
		if k != "nodeAffinity" || !convertObjectPtr(e, &a.NodeAffinity, convertNodeAffinity) {
			return false
		}
	}
	return true
}

func convertNodeAffinity(m map[string]any, na *corev1.NodeAffinity) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "requiredDuringSchedulingIgnoredDuringExecution":
			ok = convertObjectPtr(e, &na.RequiredDuringSchedulingIgnoredDuringExecution, convertNodeSelector)
		case "preferredDuringSchedulingIgnoredDuringExecution":
			ok = convertList(e, &na.PreferredDuringSchedulingIgnoredDuringExecution, convertPreferredTerm)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertNodeSelector(m map[string]any, ns *corev1.NodeSelector) bool {
	for k, e := range m {
		if k != "nodeSelectorTerms" || !convertList(e, &ns.NodeSelectorTerms, convertNodeSelectorTerm) {
			return false
		}
	}
	return true
}

func convertPreferredTerm(m map[string]any, p *corev1.PreferredSchedulingTerm) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "weight":
			ok = convertInt32(e, &p.Weight)
		case "preference":
			ok = convertObject(e, &p.Preference, convertNodeSelectorTerm)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertNodeSelectorTerm(m map[string]any, t *corev1.NodeSelectorTerm) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "matchExpressions":
			ok = convertList(e, &t.MatchExpressions, convertNodeSelectorRequirement)
		case "matchFields":
			ok = convertList(e, &t.MatchFields, convertNodeSelectorRequirement)
		}
		if !ok {
			return false
		}
	}
	return true
}

func convertNodeSelectorRequirement(m map[string]any, r *corev1.NodeSelectorRequirement) bool {
	for k, e := range m {
		var ok bool
		switch k {
		case "key":
			ok = convertString(e, &r.Key)
		case "operator":
			ok = convertStringAs(e, &r.Operator)
		case "values":
			ok = convertStrings(e, &r.Values)
		}
		if !ok {
			return false
		}
	}
	return true
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
	out := make(corev1.ResourceList, len(m))
	for k, e := range m {
		q, ok := convertQuantity(e)
		if !ok || !utf8.ValidString(k) {
			return false
		}
		out[corev1.ResourceName(k)] = q
	}
	*dst = out
	return true
}

// convertQuantity parses a quantity as Quantity.UnmarshalJSON would from appendJSON's output. A
// string goes to UnmarshalJSON with its JSON escapes still in, so only strings that appendJSON
// writes verbatim take this path.
func convertQuantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		for i := 0; i < len(x); i++ {
			if c := x[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
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
