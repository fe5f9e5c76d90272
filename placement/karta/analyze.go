package karta

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	jsoniter "github.com/json-iterator/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Analyze reads what a CR asks of the fleet through this RI. obj is the CR's unstructured content.
// Components come root first (when the root has a pod definition, as in Karta's NIMService RI), then
// children in RI order; instances in the order the paths yield them. A pod definition path that
// yields null means that instance is absent from this CR (a KServe transformer that is not set).
//
// obj may hold any value an unstructured object can (int64 from client-go, typed maps from Go builders):
// unless every value is one of jq's own types, obj is normalized first, since gojq does not always fail on
// other types; it compares an int64 wrongly (.spec.replicas == 1 is false).
func (c *Compiled) Analyze(obj map[string]any) (*Analysis, error) {
	input, err := c.jqInput(obj)
	if err != nil {
		return nil, err
	}
	return c.analyzeOnce(input)
}

// AnalyzeDecoded is Analyze for an object decoded from JSON as encoding/json decodes into an any (float64
// numbers, []any, map[string]any; internal/jsondec gives the same): it skips the check of every value, which
// walks the whole object, unless the analysis fails.
func (c *Compiled) AnalyzeDecoded(obj map[string]any) (*Analysis, error) {
	if obj == nil {
		return nil, fmt.Errorf("%s: no object to analyze", c.label())
	}
	a, err := c.analyzeOnce(obj)
	if err == nil || jqCompatible(obj, 0) {
		return a, err
	}
	return c.Analyze(obj)
}

// jqInput is obj in jq's value types: obj itself when it holds nothing else, else a normalized copy.
func (c *Compiled) jqInput(obj map[string]any) (map[string]any, error) {
	if obj == nil {
		return nil, fmt.Errorf("%s: no object", c.label())
	}
	if jqCompatible(obj, 0) {
		return obj, nil
	}
	input, err := normalizeInput(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.label(), err)
	}
	return input, nil
}

func (c *Compiled) analyzeOnce(input map[string]any) (*Analysis, error) {
	if err := c.givenUp(input); err != nil {
		return nil, err
	}
	if !c.Builtin {
		return guarded(c, input, func() (*Analysis, error) {
			started := time.Now()
			a, err := c.analyzeNow(input)
			c.noteTimeout(err, time.Since(started))
			return a, err
		})
	}
	return c.analyzeNow(input)
}

func (c *Compiled) analyzeNow(input map[string]any) (*Analysis, error) {
	ev := c.newEvaluation(input)
	defer ev.release()
	return c.analyze(ev)
}

func (c *Compiled) analyze(ev *evaluation) (*Analysis, error) {
	input := ev.input
	a := &Analysis{ResourceInterface: c.Name, TotalRequests: corev1.ResourceList{}}
	a.APIVersion, _ = input["apiVersion"].(string)
	a.Kind, _ = input["kind"].(string)
	if meta, ok := input["metadata"].(map[string]any); ok {
		a.Namespace, _ = meta["namespace"].(string)
		a.Name, _ = meta["name"].(string)
		if a.Name == "" {
			a.GenerateName, _ = meta["generateName"].(string)
		}
	}
	if a.APIVersion != "" || a.Kind != "" {
		gv, err := schema.ParseGroupVersion(a.APIVersion)
		if err != nil || gv.WithKind(a.Kind) != c.GVK {
			return nil, &AnalysisError{RI: c.label(), Object: objectLabel(input),
				Err: fmt.Errorf("apiVersion %q kind %q is not %s", a.APIVersion, a.Kind, c.GVK)}
		}
	}
	for _, cc := range c.components {
		instances, err := c.instances(ev, cc)
		if err != nil {
			return nil, err
		}
		for i := range instances {
			ci := &instances[i]
			a.TotalPods += ci.Pods
			for name, q := range ci.PodRequests {
				addQuantity(a.TotalRequests, name, scaled(q, ci.Pods))
			}
		}
		if a.Components == nil && len(instances) > 0 {
			a.Components = instances // no copy for the first component with instances
		} else {
			a.Components = append(a.Components, instances...)
		}
	}
	if c.exclusive != nil {
		units, err := c.exclusiveUnits(ev, a.Components)
		if err != nil {
			return nil, err
		}
		a.ExclusiveUnits = units
	}
	for name, q := range a.TotalRequests {
		if q.IsZero() {
			delete(a.TotalRequests, name)
		}
	}
	// Shared, not copied: the placer keeps an analysis per workload, and a copy was five small objects each.
	a.GangGroups = c.gangGroups
	// What a CR asks of the fleet does not depend on its status, and a control-plane object has none before it
	// is placed: a status path that fails on it (a byExpression iterating conditions that are not there yet)
	// leaves the status Undefined instead of failing the analysis, which would keep the workload from ever
	// being placed. Phase reports such a failure.
	if phase, err := c.phase(ev); err == nil {
		a.Status = phase
	} else {
		a.Status = PhaseUndefined
	}
	return a, nil
}

// instances evaluates one component. Paths are aligned by position: the i-th pod definition goes
// with the i-th instance id and the i-th replica counts, as in Karta.
func (c *Compiled) instances(ev *evaluation, cc *compiledComponent) ([]ComponentInstance, error) {
	templates, raw, err := c.podTemplates(ev, cc)
	if err != nil {
		return nil, err
	}
	count := len(templates)
	if count == 0 {
		return nil, nil
	}
	var ids []string
	if cc.instanceID != nil {
		out, err := c.run(ev, cc.name, cc.instanceID)
		if err != nil {
			return nil, err
		}
		if len(out) != count {
			return nil, c.evalError(ev, cc.name, cc.instanceID,
				fmt.Errorf("yields %d instance ids for %d pod definitions", len(out), count))
		}
		ids = make([]string, count)
		for i, v := range out {
			switch x := v.(type) {
			case string:
				ids[i] = x
			case int, int64, int32, float64, *big.Int:
				ids[i] = scalarString(x)
			default:
				return nil, c.evalError(ev, cc.name, cc.instanceID, fmt.Errorf("instance id %d is %s, want a string", i, typeName(v)))
			}
			if ids[i] == "" {
				return nil, c.evalError(ev, cc.name, cc.instanceID, fmt.Errorf("instance id %d is empty", i))
			}
		}
	}
	replicas, err := c.counts(ev, cc.name, cc.replicas, count, false)
	if err != nil {
		return nil, err
	}
	minReplicas, err := c.counts(ev, cc.name, cc.minReplicas, count, false)
	if err != nil {
		return nil, err
	}
	maxReplicas, err := c.counts(ev, cc.name, cc.maxReplicas, count, true)
	if err != nil {
		return nil, err
	}

	out := make([]ComponentInstance, 0, count)
	for i, d := range templates {
		if d == nil {
			continue
		}
		t := d.template
		ci := ComponentInstance{
			Name:        cc.name,
			Replicas:    replicas[i],
			MinReplicas: minReplicas[i],
			MaxReplicas: maxReplicas[i],
			PodTemplate: t,
			PodRequests: d.requests,
		}
		if ids != nil {
			ci.Instance = ids[i]
		}
		switch {
		case ci.Replicas != nil:
			ci.Pods = *ci.Replicas
		case ci.MinReplicas != nil:
			ci.Pods = *ci.MinReplicas
		default:
			ci.Pods = 1
		}
		ci.NodeSelector = t.Spec.NodeSelector
		ci.Tolerations = t.Spec.Tolerations
		if aff := t.Spec.Affinity; aff != nil && aff.NodeAffinity != nil {
			ci.RequiredNodeAffinity = aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		if cc.replicasField != nil {
			ci.ReplicasFieldPath, ci.Scalable = cc.replicasField.resolve(ev.input, i, count)
		}
		if cc.templateField != nil {
			ci.PodTemplatePath, _ = cc.templateField.resolve(ev.input, i, count)
		}
		if ci.PodTemplatePath == nil && raw != nil {
			ci.PodTemplatePath = templatePath(ev.input, raw[i], &ev.identities)
		}
		out = append(out, ci)
	}
	return out, nil
}

// counts evaluates a replica path. It may yield nothing (unset everywhere) or one value per pod
// definition; null means unset.
//
// With bound set the values are upper bounds, and one beyond the largest count bounds nothing more than the
// largest count does: KubeRay defaults maxReplicas to 2147483647, which a multi-host group multiplies by its
// hosts per replica.
func (c *Compiled) counts(ev *evaluation, component string, p *program, count int, bound bool) ([]*int64, error) {
	res := make([]*int64, count)
	if p == nil {
		return res, nil
	}
	out, err := c.run(ev, component, p)
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return res, nil
	}
	if len(out) != count {
		return nil, c.evalError(ev, component, p, fmt.Errorf("yields %d values for %d pod definitions", len(out), count))
	}
	values := make([]int64, count) // one allocation for all the counts res points to
	for i, v := range out {
		if bound && beyondLargestCount(v) {
			v = math.MaxInt32
		}
		n, set, err := toCount(v)
		if err != nil {
			return nil, c.valueError(ev, component, p, i, v, err)
		}
		if set {
			values[i] = n
			res[i] = &values[i]
		}
	}
	return res, nil
}

// beyondLargestCount tells a whole number above the largest replica count.
func beyondLargestCount(v any) bool {
	switch x := v.(type) {
	case int:
		return x > math.MaxInt32
	case float64:
		return x == math.Trunc(x) && x > math.MaxInt32
	case *big.Int:
		return x.Cmp(big.NewInt(math.MaxInt32)) > 0
	default:
		rv := reflect.ValueOf(v)
		return (rv.CanInt() && rv.Int() > math.MaxInt32) || (rv.CanUint() && rv.Uint() > math.MaxInt32)
	}
}

// toCount reads a replica count; set is false for null (unset).
func toCount(v any) (n int64, set bool, err error) {
	switch x := v.(type) {
	case nil:
		return 0, false, nil
	case int:
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, false, fmt.Errorf("%v is not a whole replica count", x)
		}
		if math.Abs(x) > math.MaxInt32 {
			return 0, false, fmt.Errorf("%v is too large for a replica count", x)
		}
		n = int64(x)
	case *big.Int:
		if !x.IsInt64() || x.Int64() > math.MaxInt32 {
			return 0, false, fmt.Errorf("%v is too large for a replica count", x)
		}
		n = x.Int64()
	case string:
		// Replica counts kept in annotations (Knative's min-scale) are strings.
		parsed, err := strconv.ParseInt(x, 10, 32)
		if err != nil {
			return 0, false, fmt.Errorf("%q is not a replica count", x)
		}
		n = parsed
	default:
		// Integers of other Go types (int64 from client-go objects).
		rv := reflect.ValueOf(v)
		switch {
		case rv.CanInt():
			n = rv.Int()
		case rv.CanUint() && rv.Uint() <= math.MaxInt32:
			n = int64(rv.Uint())
		default:
			return 0, false, fmt.Errorf("%s is not a replica count", typeName(v))
		}
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, false, fmt.Errorf("%d is not a valid replica count", n)
	}
	return n, true, nil
}

// podTemplates evaluates the pod definition; nil entries are instances absent from this CR.
func (c *Compiled) podTemplates(ev *evaluation, cc *compiledComponent) ([]*decodedTemplate, []any, error) {
	switch cc.form {
	case specPodTemplate:
		out, err := c.run(ev, cc.name, cc.podTemplate)
		if err != nil {
			return nil, nil, err
		}
		res := make([]*decodedTemplate, len(out))
		for i, v := range out {
			if v == nil {
				continue
			}
			d, err := decodeTemplate(v, specPodTemplate)
			if err != nil {
				return nil, nil, c.valueError(ev, cc.name, cc.podTemplate, i, v, templateError("PodTemplateSpec", err))
			}
			res[i] = d
		}
		return res, out, nil
	case specPodSpec:
		out, err := c.run(ev, cc.name, cc.podSpec)
		if err != nil {
			return nil, nil, err
		}
		var metas []any
		if cc.metadata != nil {
			if metas, err = c.run(ev, cc.name, cc.metadata); err != nil {
				return nil, nil, err
			}
		}
		res := make([]*decodedTemplate, len(out))
		for i, v := range out {
			if v == nil {
				continue
			}
			d, err := decodeTemplate(v, specPodSpec)
			if err != nil {
				return nil, nil, c.valueError(ev, cc.name, cc.podSpec, i, v, templateError("PodSpec", err))
			}
			if i < len(metas) && metas[i] != nil {
				var meta metav1.ObjectMeta
				if err := decodeObjectMeta(metas[i], &meta); err != nil {
					return nil, nil, c.evalError(ev, cc.name, cc.metadata, fmt.Errorf("value %d is not object metadata: %w", i, err))
				}
				// The cached template is shared: give this instance its own copy with the metadata.
				t := &corev1.PodTemplateSpec{Spec: d.template.Spec}
				t.Labels, t.Annotations = meta.Labels, meta.Annotations
				d = &decodedTemplate{template: t, requests: d.requests}
			}
			res[i] = d
		}
		return res, nil, nil
	case specFragmented:
		res, err := c.fragmentedTemplates(ev, cc)
		return res, nil, err
	}
	return nil, nil, nil
}

// fragmentedTemplates assembles a pod template per position from the fragment paths. The pod's
// containers are containers plus container (unless one of the same name is there); when none of
// them has requests or limits, resources is the pod's request and is given to the first container
// (or to a container named "main" when there is none) so the template alone says what the pod needs.
func (c *Compiled) fragmentedTemplates(ev *evaluation, cc *compiledComponent) ([]*decodedTemplate, error) {
	f := &cc.fragments
	progs := f.all()
	values := make([][]any, len(progs))
	count := 0
	for i, p := range progs {
		if p == nil {
			continue
		}
		out, err := c.run(ev, cc.name, p)
		if err != nil {
			return nil, err
		}
		values[i] = out
		count = max(count, len(out))
	}
	at := func(p *program, i int) any {
		for k, q := range progs {
			if q == p && p != nil && i < len(values[k]) {
				return values[k][i]
			}
		}
		return nil
	}
	res := make([]*decodedTemplate, count)
	for i := range count {
		t := &corev1.PodTemplateSpec{}
		spec := &t.Spec
		var resources *corev1.ResourceRequirements
		var container *corev1.Container
		var image string
		fields := []struct {
			p   *program
			dst any
		}{
			{f.schedulerName, &spec.SchedulerName},
			{f.labels, &t.Labels},
			{f.annotations, &t.Annotations},
			{f.resources, &resources},
			{f.resourceClaims, &spec.ResourceClaims},
			{f.containers, &spec.Containers},
			{f.container, &container},
			{f.priorityClass, &spec.PriorityClassName},
			{f.image, &image},
			{f.nodeSelector, &spec.NodeSelector},
			{f.tolerations, &spec.Tolerations},
		}
		for _, fd := range fields {
			v := at(fd.p, i)
			if v == nil {
				continue
			}
			if err := decodeValue(v, fd.dst); err != nil {
				return nil, c.valueError(ev, cc.name, fd.p, i, v, err)
			}
		}
		for _, aff := range []struct {
			p   *program
			pod bool
		}{{f.podAffinity, true}, {f.nodeAffinity, false}} {
			v := at(aff.p, i)
			if v == nil {
				continue
			}
			if spec.Affinity == nil {
				spec.Affinity = &corev1.Affinity{}
			}
			var err error
			if aff.pod {
				err = decodeValue(v, &spec.Affinity.PodAffinity)
			} else {
				err = decodeValue(v, &spec.Affinity.NodeAffinity)
			}
			if err != nil {
				return nil, c.valueError(ev, cc.name, aff.p, i, v, err)
			}
		}
		if container != nil && !hasContainer(spec.Containers, container.Name) {
			spec.Containers = append(spec.Containers, *container)
		}
		if image != "" && len(spec.Containers) == 0 {
			spec.Containers = append(spec.Containers, corev1.Container{Name: "main"})
		}
		if image != "" && spec.Containers[0].Image == "" {
			spec.Containers[0].Image = image
		}
		if resources != nil && (len(resources.Requests) > 0 || len(resources.Limits) > 0) && !anyHasResources(spec.Containers) {
			if len(spec.Containers) == 0 {
				spec.Containers = append(spec.Containers, corev1.Container{Name: "main"})
			}
			spec.Containers[0].Resources = *resources
		}
		if err := uncountableResource(spec, ""); err != nil {
			return nil, &AnalysisError{RI: c.label(), Component: cc.name, Object: objectLabel(ev.input),
				Err: fmt.Errorf("pod %d: %w", i, err)}
		}
		res[i] = &decodedTemplate{template: t, requests: EffectivePodRequests(spec)}
	}
	return res, nil
}

func hasContainer(list []corev1.Container, name string) bool {
	for i := range list {
		if list[i].Name == name {
			return true
		}
	}
	return false
}

func anyHasResources(list []corev1.Container) bool {
	for i := range list {
		if hasResources(&list[i]) {
			return true
		}
	}
	return false
}

// fastJSON is json-iterator without map-key sorting: the JSON only feeds the decoder.
var fastJSON = jsoniter.Config{EscapeHTML: false, SortMapKeys: false}.Froze()

// decodeTemplate decodes a pod template (or, for specPodSpec, a PodSpec) and its effective
// request, through the content-keyed cache.
func decodeTemplate(v any, form specForm) (*decodedTemplate, error) {
	key := contentKey(form, v)
	if d, ok := sharedTemplates.get(key); ok {
		return d, nil
	}
	t, ok := convertTemplate(v, form)
	if !ok {
		t = &corev1.PodTemplateSpec{}
		var err error
		if form == specPodSpec {
			err = decodeValue(v, &t.Spec)
		} else {
			err = decodeValue(v, t)
		}
		if err != nil {
			if bad := badQuantity(v, form); bad != nil {
				return nil, uncountableError{bad}
			}
			return nil, err
		}
	}
	prefix := "spec."
	if form == specPodSpec {
		prefix = ""
	}
	if err := uncountableResource(&t.Spec, prefix); err != nil {
		return nil, uncountableError{err}
	}
	d := &decodedTemplate{template: t, requests: EffectivePodRequests(&t.Spec)}
	sharedTemplates.put(key, d)
	return d, nil
}

// uncountableError is a template that asks for a quantity fleetflow cannot count: one that does not parse, or
// one the API refuses.
type uncountableError struct{ error }

func (e uncountableError) Unwrap() error { return e.error }

// templateError says what is wrong with a value of a template path: it is no template of the form, or it asks
// for a quantity fleetflow cannot count.
func templateError(form string, err error) error {
	var uncountable uncountableError
	if errors.As(err, &uncountable) {
		return err
	}
	return fmt.Errorf("is not a %s: %w", form, err)
}

// fieldError is what is wrong at field, a path within a value an RI path yielded (a pod template's
// spec.containers[web].resources.requests.cpu).
type fieldError struct {
	field string
	err   error
}

func (e fieldError) Error() string { return e.field + ": " + e.err.Error() }

func (e fieldError) Unwrap() error { return e.err }

// uncountableResource names the first quantity of a pod that the API refuses (negative, a fraction of an
// extended resource such as a GPU, a request above its limit: the workload could never run, and capacity
// cannot be reserved for it), or the first larger than Largest (no node has it, and counting it would overflow),
// as a fieldError whose field starts with prefix (the path from the value the RI yielded to the PodSpec).
func uncountableResource(spec *corev1.PodSpec, prefix string) error {
	// where is the field of the requirements (containers[web].resources); the pod overhead is a plain list.
	check := func(where string, r *corev1.ResourceRequirements) error {
		at := func(list string, name corev1.ResourceName, format string, args ...any) error {
			field := prefix + where + "." + list + fieldKey(string(name))
			if where == "overhead" {
				field = prefix + "overhead" + fieldKey(string(name))
			}
			return fieldError{field: field, err: fmt.Errorf(format, args...)}
		}
		for _, list := range []struct {
			name string
			l    corev1.ResourceList
		}{{"requests", r.Requests}, {"limits", r.Limits}} {
			for _, name := range slices.Sorted(maps.Keys(list.l)) {
				q := list.l[name]
				if q.Sign() < 0 {
					return at(list.name, name, "%s is negative", q.String())
				}
				if largest := Largest(name); q.Cmp(largest) > 0 {
					return at(list.name, name, "%s is more than fleetflow counts (%s)", q.String(), largest.String())
				}
				if extendedResource(name) && q.MilliValue()%1000 != 0 {
					return at(list.name, name, "%s is not a whole number: Kubernetes counts extended resources in units", q.String())
				}
			}
		}
		for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
			request := r.Requests[name]
			limit, ok := r.Limits[name]
			switch {
			case !ok:
			case request.Cmp(limit) > 0:
				return at("requests", name, "%s is more than its limit %s", request.String(), limit.String())
			case (extendedResource(name) || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)) && request.Cmp(limit) != 0:
				return at("requests", name, "%s is not its limit %s: Kubernetes does not overcommit it", request.String(), limit.String())
			}
		}
		return nil
	}
	for _, group := range []struct {
		field      string
		containers []corev1.Container
	}{{"initContainers", spec.InitContainers}, {"containers", spec.Containers}} {
		for _, c := range group.containers {
			if err := check(fmt.Sprintf("%s[%s].resources", group.field, c.Name), &c.Resources); err != nil {
				return err
			}
		}
	}
	if spec.Resources != nil {
		if err := check("resources", spec.Resources); err != nil {
			return err
		}
	}
	return check("overhead", &corev1.ResourceRequirements{Requests: spec.Overhead})
}

// badQuantity names the first resource quantity of a pod template (a PodSpec for specPodSpec) that does not
// parse, by the field a user wrote. The decoder's own error names Go types and byte offsets instead; it is only
// looked for once decoding failed.
func badQuantity(v any, form specForm) error {
	spec, _ := v.(map[string]any)
	prefix := ""
	if form != specPodSpec {
		spec, _ = spec["spec"].(map[string]any)
		prefix = "spec."
	}
	if spec == nil {
		return nil
	}
	quantities := func(path string, list any) error {
		l, _ := list.(map[string]any)
		for _, name := range slices.Sorted(maps.Keys(l)) {
			if err := parseQuantityValue(l[name]); err != nil {
				return fieldError{field: path + fieldKey(name), err: err}
			}
		}
		return nil
	}
	resources := func(path string, r any) error {
		rm, _ := r.(map[string]any)
		if err := quantities(path+".requests", rm["requests"]); err != nil {
			return err
		}
		return quantities(path+".limits", rm["limits"])
	}
	for _, field := range []string{"initContainers", "containers"} {
		list, _ := spec[field].([]any)
		for i, c := range list {
			container, _ := c.(map[string]any)
			name := strconv.Itoa(i)
			if n, ok := container["name"].(string); ok && n != "" {
				name = n
			}
			if err := resources(fmt.Sprintf("%s%s[%s].resources", prefix, field, name), container["resources"]); err != nil {
				return err
			}
		}
	}
	if err := resources(prefix+"resources", spec["resources"]); err != nil {
		return err
	}
	return quantities(prefix+"overhead", spec["overhead"])
}

// parseQuantityValue says why a decoded JSON value is no Kubernetes quantity, which is a string or a number.
func parseQuantityValue(v any) error {
	switch q := v.(type) {
	case string:
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("%q is not a quantity: %w", q, err)
		}
		return nil
	case float64, int, int64, *big.Int:
		return nil
	default:
		return fmt.Errorf("%s is not a quantity: want a string such as \"500m\" or \"2Gi\", or a number", typeName(v))
	}
}

// extendedResource reports whether name is an extended resource (nvidia.com/gpu), which the API takes in whole
// units only, as opposed to a native one (cpu, memory, hugepages-2Mi, kubernetes.io/...).
func extendedResource(name corev1.ResourceName) bool {
	return strings.Contains(string(name), "/") && !strings.Contains(string(name), "kubernetes.io/") &&
		!strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

// decodeObjectMeta decodes pod metadata, converting it directly when it holds only the common fields.
func decodeObjectMeta(v any, meta *metav1.ObjectMeta) error {
	if m, ok := v.(map[string]any); ok {
		var fast metav1.ObjectMeta
		if convertObjectMeta(m, &fast) {
			*meta = fast
			return nil
		}
	}
	return decodeValue(v, meta)
}

// decodeValue converts a jq value into a Kubernetes API type through its JSON form, so the API
// types' own decoding (quantities, int-or-string) applies.
func decodeValue(v any, dst any) error {
	if s, ok := v.(string); ok {
		if p, ok := dst.(*string); ok {
			*p = s
			return nil
		}
	}
	// json-iterator in its standard-library-compatible mode honours the API types' UnmarshalJSON
	// (quantities, int-or-string) at a fraction of encoding/json's cost, which dominates analysis.
	data, err := appendJSON(nil, v)
	if err != nil {
		return err
	}
	return fastJSON.Unmarshal(data, dst)
}
