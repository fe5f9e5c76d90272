package karta

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Compiled is a validated RI with every jq expression compiled once. It is immutable and safe
// for concurrent use: Analyze and Phase only read it.
type Compiled struct {
	// Name is the RI's metadata.name, or its source when the RI has no name (as in some of Karta's examples).
	Name string
	// Source is where the RI came from: a file path, "builtin:<file>", or an apiserver object.
	Source string
	// GVK is the root component's kind: the CRs this RI analyzes.
	GVK schema.GroupVersionKind
	// Builtin marks the RIs shipped with fleetflow (deploy/resourceinterfaces).
	Builtin bool
	// Warnings are the parser's, carried along so whoever shows the RI's state can show them.
	Warnings []string
	// Created is the RI object's metadata.creationTimestamp on the control plane (zero for files and built-ins):
	// of the user RIs of one kind, the one created last is in force (Registry).
	Created time.Time

	components []*compiledComponent
	status     *compiledStatus
	gangGroups []GangGroup
	// exclusive is the AnnotationExclusiveTopology expression, nil without one.
	exclusive *program

	// combined evaluates every path Analyze reads from the CR in one run; slots is its arity.
	combined *gojq.Code
	slots    int

	// timeoutsInARow counts the evaluations in a row that ran out of time or were slow (see givenUp).
	timeoutsInARow *atomic.Int32
	// identity names this version of the RI (Identity).
	identity string
}

// Divisible reports whether the RI makes its kind divisible: every object analyzes to one pod-bearing
// component, without instances, whose replica count is a plain field path without an iterator, which a
// Divide spread rewrites per cluster. It is the static side of ComponentInstance.Scalable, so a policy that
// divides a kind that cannot be divided is refused when it is applied rather than for each workload; the
// scheduler still checks each analysis.
func (c *Compiled) Divisible() bool {
	if len(c.components) != 1 {
		return false
	}
	cc := c.components[0]
	return cc.instanceID == nil && cc.replicasField != nil && !slices.Contains(cc.replicasField.segments, iterSegment)
}

// label names the RI for messages: the name, and the source when it differs.
// templateProgram is the path the component reads its pod template (a PodSpec for specPodSpec) from; nil for a
// fragmented pod definition.
func (cc *compiledComponent) templateProgram() *program {
	if cc.form == specPodSpec {
		return cc.podSpec
	}
	return cc.podTemplate
}

func (c *Compiled) label() string {
	if c.Source == "" || c.Source == c.Name {
		return fmt.Sprintf("resource interface %q", c.Name)
	}
	return fmt.Sprintf("resource interface %q (%s)", c.Name, c.Source)
}

type specForm int

const (
	specPodTemplate specForm = iota + 1
	specPodSpec
	specFragmented
)

type compiledComponent struct {
	name string
	form specForm

	podTemplate *program
	podSpec     *program
	metadata    *program
	fragments   fragmentPrograms

	replicas    *program
	minReplicas *program
	maxReplicas *program
	instanceID  *program

	// replicasField is set when replicasPath is a plain field path a spread can rewrite.
	replicasField *plainPath
	// templateField is set when podTemplateSpecPath is a plain field path, so a copy's pod templates can be
	// written to (pinned to the nodes placement packed them on).
	templateField *plainPath
}

type fragmentPrograms struct {
	schedulerName, labels, annotations, resources, resourceClaims   *program
	podAffinity, nodeAffinity, containers, container, priorityClass *program
	image, nodeSelector, tolerations                                *program
}

// program is one compiled jq expression and where it came from in the RI.
type program struct {
	field string // e.g. "scaleDefinition.replicasPath"
	expr  string
	code  *gojq.Code
	slot  int // index in the combined program's result, -1 when not part of it
}

// CompileError is an RI that failed validation or whose jq does not compile.
type CompileError struct {
	RI        string
	Source    string
	Component string
	Field     string
	Expr      string
	Err       error
}

func (e *CompileError) Error() string {
	msg := fmt.Sprintf("resource interface %q", e.RI)
	if e.Source != "" && e.Source != e.RI {
		msg += fmt.Sprintf(" (%s)", e.Source)
	}
	if e.Component != "" {
		msg += fmt.Sprintf(": component %q", e.Component)
	}
	if e.Field != "" {
		msg += ": " + e.Field
	}
	if e.Expr != "" {
		msg += fmt.Sprintf(" %q", e.Expr)
	}
	return msg + ": " + e.Err.Error()
}

func (e *CompileError) Unwrap() error { return e.Err }

type compiler struct {
	name, source string
	err          error
	crPrograms   []*program // paths evaluated on the CR, in slot order
}

// onCR marks p as evaluated on the CR by Analyze, giving it a slot in the combined program.
func (cp *compiler) onCR(p *program) *program {
	if p != nil {
		p.slot = len(cp.crPrograms)
		cp.crPrograms = append(cp.crPrograms, p)
	}
	return p
}

// combine builds one jq program that yields the outputs of every CR path in slot order, each path
// followed by a separator value: (P0), sep, (P1), sep, ... It is an optimization only: if it does
// not compile, Analyze runs each path alone. Streaming the outputs (rather than collecting them in
// jq) lets the Go side stop a runaway path after maxOutputs values at no cost to the others.
func (cp *compiler) combine() (*gojq.Code, int) {
	if len(cp.crPrograms) == 0 {
		return nil, 0
	}
	var b strings.Builder
	for i, p := range cp.crPrograms {
		if i > 0 {
			b.WriteString(", ")
		}
		// The newline ends a trailing jq comment in the path before the closing parenthesis.
		fmt.Fprintf(&b, "(%s\n), %s", p.expr, separatorFunc)
	}
	query, err := gojq.Parse(b.String())
	if err != nil {
		return nil, 0
	}
	code, err := gojq.Compile(query,
		gojq.WithEnvironLoader(func() []string { return nil }),
		gojq.WithFunction(separatorFunc, 0, 0, func(any, []any) any { return pathSeparator }))
	if err != nil {
		return nil, 0
	}
	return code, len(cp.crPrograms)
}

// separatorFunc names the jq function emitting pathSeparator. A user path calling it would only
// break the combined run's slot count, which sends Analyze to the per-path runs.
const separatorFunc = "_fleetflow_path_separator"

// pathSeparator is a value no jq path can produce: a pointer to a private type.
var pathSeparator any = &separatorValue{}

type separatorValue struct{ _ byte }

func (cp *compiler) fail(component, field, expr string, err error) {
	if cp.err == nil {
		cp.err = &CompileError{RI: cp.name, Source: cp.source, Component: component, Field: field, Expr: expr, Err: err}
	}
}

// jq compiles expr for field of component; nil expr gives a nil program.
func (cp *compiler) jq(component, field string, expr *string) *program {
	if expr == nil {
		return nil
	}
	code, err := compileJQ(*expr)
	if err != nil {
		cp.fail(component, field, *expr, err)
		return nil
	}
	return &program{field: field, expr: *expr, code: code, slot: -1}
}

func compileJQ(expr string) (*gojq.Code, error) {
	query, err := gojq.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("jq parse error: %w", err)
	}
	// The environment loader returns nothing: analysis must not depend on the process environment.
	code, err := gojq.Compile(query, gojq.WithEnvironLoader(func() []string { return nil }))
	if err != nil {
		return nil, fmt.Errorf("jq compile error: %w", err)
	}
	return code, nil
}

// Compile validates ri and compiles all of its jq. source names where it came from (a file, for
// instance) and appears in errors. An RI without a name (as some of Karta's examples are) is named after its
// source and its kind: the registry keeps one RI per name, and several unnamed ones may come from one file.
func Compile(ri *ResourceInterface, source string) (*Compiled, error) {
	if ri == nil {
		return nil, errors.New("nil resource interface")
	}
	name := ri.Name
	if name == "" {
		name = source
	}
	cp := &compiler{name: name, source: source}
	sd := &ri.Spec.StructureDefinition
	root := &sd.RootComponent
	if root.Name == "" {
		cp.fail("", "spec.structureDefinition.rootComponent.name", "", errors.New("required"))
		return nil, cp.err
	}
	if root.Kind == nil || root.Kind.Kind == "" || root.Kind.Version == "" {
		cp.fail(root.Name, "kind", "", errors.New("rootComponent needs kind.version and kind.kind: they select the CRs this RI analyzes"))
		return nil, cp.err
	}
	gvk := schema.GroupVersionKind{Group: root.Kind.Group, Version: root.Kind.Version, Kind: root.Kind.Kind}
	if ri.Name == "" {
		name = source + "#" + gvk.Kind + "." + gvk.GroupVersion().String()
		cp.name = name
	}
	c := &Compiled{Name: name, Source: source, GVK: gvk, Warnings: ri.Warnings, timeoutsInARow: new(atomic.Int32),
		identity: identityOf(name, ri)}

	names := map[string]*ComponentDefinition{root.Name: root}
	for i := range sd.ChildComponents {
		child := &sd.ChildComponents[i]
		if child.Name == "" {
			cp.fail("", fmt.Sprintf("spec.structureDefinition.childComponents[%d].name", i), "", errors.New("required"))
			return nil, cp.err
		}
		if _, dup := names[child.Name]; dup {
			cp.fail(child.Name, "name", "", errors.New("duplicate component name"))
			return nil, cp.err
		}
		names[child.Name] = child
	}
	if err := checkOwners(sd, names); err != nil {
		cp.fail(err.component, "ownerRef", "", err.err)
		return nil, cp.err
	}

	all := append([]*ComponentDefinition{root}, pointers(sd.ChildComponents)...)
	for _, def := range all {
		if cc := cp.component(def); cc != nil {
			c.components = append(c.components, cc)
		}
		cp.podSelector(def)
		if def != root && def.StatusDefinition != nil {
			// Karta documents status for the root only; we still validate a child's so a typo is caught.
			cp.statusDefinition(def.Name, def.StatusDefinition, false)
		}
	}
	if root.StatusDefinition != nil {
		c.status = cp.statusDefinition(root.Name, root.StatusDefinition, true)
	}
	c.gangGroups = cp.gangGroups(ri.Spec.OptimizationInstructions, names)
	if expr := ri.Annotations[AnnotationExclusiveTopology]; strings.TrimSpace(expr) != "" {
		c.exclusive = cp.onCR(cp.jq("", exclusiveField, &expr))
	}
	if cp.err != nil {
		return nil, cp.err
	}
	c.combined, c.slots = cp.combine()
	return c, nil
}

func pointers(defs []ComponentDefinition) []*ComponentDefinition {
	out := make([]*ComponentDefinition, len(defs))
	for i := range defs {
		out[i] = &defs[i]
	}
	return out
}

type ownerError struct {
	component string
	err       error
}

// checkOwners verifies every ownerRef names a component and that ownership has no cycle.
func checkOwners(sd *StructureDefinition, names map[string]*ComponentDefinition) *ownerError {
	if sd.RootComponent.OwnerRef != nil && *sd.RootComponent.OwnerRef != "" {
		return &ownerError{sd.RootComponent.Name, errors.New("the root component cannot have an owner")}
	}
	for i := range sd.ChildComponents {
		child := &sd.ChildComponents[i]
		seen := map[string]bool{child.Name: true}
		cur := child
		for cur.OwnerRef != nil && *cur.OwnerRef != "" {
			owner, ok := names[*cur.OwnerRef]
			if !ok {
				return &ownerError{cur.Name, fmt.Errorf("owner %q is not a component of this RI", *cur.OwnerRef)}
			}
			if seen[owner.Name] {
				return &ownerError{child.Name, fmt.Errorf("ownership cycle through %q", owner.Name)}
			}
			seen[owner.Name] = true
			cur = owner
		}
	}
	return nil
}

// component compiles a component's spec, scale and instance-id paths; nil when it defines no pods.
func (cp *compiler) component(def *ComponentDefinition) *compiledComponent {
	cc := &compiledComponent{name: def.Name}
	if def.ScaleDefinition != nil {
		s := def.ScaleDefinition
		cc.replicas = cp.onCR(cp.jq(def.Name, "scaleDefinition.replicasPath", s.ReplicasPath))
		cc.minReplicas = cp.onCR(cp.jq(def.Name, "scaleDefinition.minReplicasPath", s.MinReplicasPath))
		cc.maxReplicas = cp.onCR(cp.jq(def.Name, "scaleDefinition.maxReplicasPath", s.MaxReplicasPath))
		if s.ReplicasPath != nil {
			cc.replicasField = parsePlainPath(*s.ReplicasPath)
		}
	}
	cc.instanceID = cp.onCR(cp.jq(def.Name, "instanceIdPath", def.InstanceIDPath))

	sd := def.SpecDefinition
	if sd == nil {
		return nil
	}
	forms := 0
	if sd.PodTemplateSpecPath != nil {
		forms++
		cc.form = specPodTemplate
		cc.podTemplate = cp.onCR(cp.jq(def.Name, "specDefinition.podTemplateSpecPath", sd.PodTemplateSpecPath))
		cc.templateField = parsePlainPath(*sd.PodTemplateSpecPath)
	}
	if sd.PodSpecPath != nil {
		forms++
		cc.form = specPodSpec
		cc.podSpec = cp.onCR(cp.jq(def.Name, "specDefinition.podSpecPath", sd.PodSpecPath))
	}
	if sd.MetadataPath != nil {
		if sd.PodSpecPath == nil {
			cp.fail(def.Name, "specDefinition.metadataPath", *sd.MetadataPath, errors.New("may be used only with podSpecPath"))
			return nil
		}
		cc.metadata = cp.onCR(cp.jq(def.Name, "specDefinition.metadataPath", sd.MetadataPath))
	}
	if f := sd.FragmentedPodSpecDefinition; f != nil {
		forms++
		cc.form = specFragmented
		const p = "specDefinition.fragmentedPodSpecDefinition."
		fp := &cc.fragments
		fp.schedulerName = cp.onCR(cp.jq(def.Name, p+"schedulerNamePath", f.SchedulerNamePath))
		fp.labels = cp.onCR(cp.jq(def.Name, p+"labelsPath", f.LabelsPath))
		fp.annotations = cp.onCR(cp.jq(def.Name, p+"annotationsPath", f.AnnotationsPath))
		fp.resources = cp.onCR(cp.jq(def.Name, p+"resourcesPath", f.ResourcesPath))
		fp.resourceClaims = cp.onCR(cp.jq(def.Name, p+"resourceClaimsPath", f.ResourceClaimsPath))
		fp.podAffinity = cp.onCR(cp.jq(def.Name, p+"podAffinityPath", f.PodAffinityPath))
		fp.nodeAffinity = cp.onCR(cp.jq(def.Name, p+"nodeAffinityPath", f.NodeAffinityPath))
		fp.containers = cp.onCR(cp.jq(def.Name, p+"containersPath", f.ContainersPath))
		fp.container = cp.onCR(cp.jq(def.Name, p+"containerPath", f.ContainerPath))
		fp.priorityClass = cp.onCR(cp.jq(def.Name, p+"priorityClassNamePath", f.PriorityClassNamePath))
		fp.image = cp.onCR(cp.jq(def.Name, p+"imagePath", f.ImagePath))
		fp.nodeSelector = cp.onCR(cp.jq(def.Name, p+"nodeSelectorPath", f.NodeSelectorPath))
		fp.tolerations = cp.onCR(cp.jq(def.Name, p+"tolerationsPath", f.TolerationsPath))
		if len(fp.nonNil()) == 0 {
			cp.fail(def.Name, "specDefinition.fragmentedPodSpecDefinition", "", errors.New("defines no path"))
			return nil
		}
	}
	switch forms {
	case 0:
		cp.fail(def.Name, "specDefinition", "", errors.New("needs one of podTemplateSpecPath, podSpecPath or fragmentedPodSpecDefinition"))
		return nil
	case 1:
		return cc
	default:
		cp.fail(def.Name, "specDefinition", "", errors.New("podTemplateSpecPath, podSpecPath and fragmentedPodSpecDefinition are exclusive"))
		return nil
	}
}

func (f *fragmentPrograms) all() []*program {
	return []*program{f.schedulerName, f.labels, f.annotations, f.resources, f.resourceClaims,
		f.podAffinity, f.nodeAffinity, f.containers, f.container, f.priorityClass, f.image,
		f.nodeSelector, f.tolerations}
}

func (f *fragmentPrograms) nonNil() []*program {
	var out []*program
	for _, p := range f.all() {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// podSelector validates the pod-side jq, which runs on pods and is not evaluated by analysis.
func (cp *compiler) podSelector(def *ComponentDefinition) {
	ps := def.PodSelector
	if ps == nil {
		return
	}
	if s := ps.ComponentTypeSelector; s != nil {
		cp.jq(def.Name, "podSelector.componentTypeSelector.keyPath", &s.KeyPath)
	}
	if s := ps.ComponentInstanceSelector; s != nil {
		cp.jq(def.Name, "podSelector.componentInstanceSelector.idPath", &s.IDPath)
	}
	if s := ps.ReplicaSelector; s != nil {
		cp.jq(def.Name, "podSelector.replicaSelector.keyPath", &s.KeyPath)
	}
}

func (cp *compiler) gangGroups(oi *OptimizationInstructions, names map[string]*ComponentDefinition) []GangGroup {
	if oi == nil || oi.GangScheduling == nil {
		return nil
	}
	var out []GangGroup
	seen := map[string]bool{}
	for i, pg := range oi.GangScheduling.PodGroups {
		field := fmt.Sprintf("optimizationInstructions.gangScheduling.podGroups[%d]", i)
		if pg.Name == "" {
			cp.fail("", field+".name", "", errors.New("required"))
			return nil
		}
		if seen[pg.Name] {
			cp.fail("", field+".name", "", fmt.Errorf("duplicate pod group %q", pg.Name))
			return nil
		}
		seen[pg.Name] = true
		group := GangGroup{Name: pg.Name}
		for j, m := range pg.Members {
			mfield := fmt.Sprintf("%s.members[%d]", field, j)
			if _, ok := names[m.ComponentName]; !ok {
				cp.fail(m.ComponentName, mfield+".componentName", "", errors.New("not a component of this RI"))
				return nil
			}
			for k := range m.GroupByKeyPaths {
				cp.jq(m.ComponentName, fmt.Sprintf("%s.groupByKeyPaths[%d]", mfield, k), &m.GroupByKeyPaths[k])
			}
			for k := range m.Filters {
				cp.jq(m.ComponentName, fmt.Sprintf("%s.filters[%d]", mfield, k), &m.Filters[k])
			}
			group.Members = append(group.Members, GangMember{
				ComponentName:   m.ComponentName,
				GroupByKeyPaths: append([]string(nil), m.GroupByKeyPaths...),
				Filters:         append([]string(nil), m.Filters...),
			})
		}
		out = append(out, group)
	}
	return out
}
