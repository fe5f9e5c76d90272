package fleetspec

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Parse decodes a fleet description from YAML or JSON and validates it. Unknown fields are errors, so a
// misspelled key fails loudly instead of silently meaning "nothing". source names the input (usually a file
// path) in error messages.
func Parse(data []byte, source string) (*Fleet, error) {
	if err := OneDocument(data); err != nil {
		return nil, fmt.Errorf("fleet %s: %w", source, err)
	}
	if err := CheckDocument(data, reflect.TypeFor[Fleet]()); err != nil {
		return nil, fmt.Errorf("fleet %s: %w", source, err)
	}
	var fleet Fleet
	if err := yaml.UnmarshalStrict(data, &fleet); err != nil {
		return nil, fmt.Errorf("fleet %s: %w", source, err)
	}
	if err := fleet.Validate(); err != nil {
		return nil, fmt.Errorf("fleet %s: %w", source, err)
	}
	return &fleet, nil
}

// OneDocument fails when data holds more than one YAML document: decoding reads the first and would drop
// the others without a word.
func OneDocument(data []byte) error {
	if !bytes.HasPrefix(data, []byte("---")) && !bytes.Contains(data, []byte("\n---")) {
		return nil // no line starts a document: one document, found without reading every line of a big file
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	documents := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			documents++
		}
	}
	if documents > 1 {
		return fmt.Errorf("holds %d YAML documents; a fleet file is one document (put every cluster, policy and "+
			"workload in its lists)", documents)
	}
	return nil
}

// stripComments drops comment lines, so a document of comments only counts as empty.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' && !bytes.Equal(t, []byte("---")) {
			out = append(out, line...)
		}
	}
	return out
}

// CheckQuantities reports, with their paths, the node groups' quantities that do not parse: decoding would
// refuse them without saying where. It returns nil when all parse (decoding reports the rest).
func CheckQuantities(data []byte) error {
	root := parseNode(data)
	if root == nil {
		return nil
	}
	return checkQuantities(root)
}

// CheckDocument runs CheckQuantities and then CheckStrings on one parse of data: on a fleet file of thousands
// of workloads, parsing is what these checks cost.
func CheckDocument(data []byte, target reflect.Type) error {
	root := parseNode(data)
	if root == nil {
		return nil
	}
	return CheckTree(root, target)
}

// CheckTree runs CheckDocument's checks on root, the document's root node, for a caller that parsed it already.
func CheckTree(root *yamlv3.Node, target reflect.Type) error {
	if err := checkQuantities(root); err != nil {
		return err
	}
	var v validator
	checkStrings(&v, root, target, "")
	return v.err()
}

func checkQuantities(root *yamlv3.Node) error {
	var v validator
	for i, cluster := range items(field(root, "clusters")) {
		for j, group := range items(field(cluster, "nodes")) {
			for _, name := range []string{"allocatable", "requested"} {
				quantities := field(group, name)
				if quantities == nil || quantities.Kind != yamlv3.MappingNode {
					continue
				}
				byKey := map[string]*yamlv3.Node{}
				for k := 0; k+1 < len(quantities.Content); k += 2 {
					byKey[quantities.Content[k].Value] = resolveAlias(quantities.Content[k+1])
				}
				for _, key := range sortedKeys(byKey) {
					if reason := quantityProblem(byKey[key]); reason != "" {
						v.add(fmt.Sprintf("clusters[%d].nodes[%d].%s[%s]", i, j, name, key), reason)
					}
				}
			}
		}
	}
	return v.err()
}

// quantityProblem says why a YAML value is no quantity, or "". A plain number is one whatever its spelling
// (1_000, 1e3): decoding reads it as a number.
func quantityProblem(node *yamlv3.Node) string {
	if node.Kind != yamlv3.ScalarNode {
		return "want a quantity such as 4, 500m or 16Gi, got a YAML list or map"
	}
	tag := node.ShortTag()
	switch {
	case node.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle) == 0 && (tag == "!!int" || tag == "!!float"):
		return ""
	case tag == "!!null":
		return "null is no quantity: want one such as 4, 500m or 16Gi"
	}
	if _, err := resource.ParseQuantity(node.Value); err != nil {
		return fmt.Sprintf("%v is no quantity: %v", node.Value, err)
	}
	return ""
}

// MaxGroupNodes bounds a node group's count: a fleet file describes a fleet to simulate or start, and a
// typo of a few zeros would otherwise expand into millions of nodes and exhaust memory before any message.
const MaxGroupNodes = 100_000

// FieldError is one validation failure, located by a field path such as "clusters[1].nodes[0].allocatable".
type FieldError struct {
	Path   string
	Reason string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Reason }

// Validate reports every problem of the fleet, each as a *FieldError joined with errors.Join.
func (f *Fleet) Validate() error {
	var v validator
	if len(f.Clusters) == 0 {
		v.add("clusters", "required")
	}
	for _, name := range sortedKeys(f.Namespaces) {
		path := fmt.Sprintf("namespaces[%s]", name)
		for _, msg := range validation.IsDNS1123Label(name) {
			v.add(path, "invalid namespace name: "+msg)
		}
		v.labels(path+".labels", f.Namespaces[name].Labels)
	}
	clusterIndex := map[string]int{}
	for i, cluster := range f.Clusters {
		path := fmt.Sprintf("clusters[%d]", i)
		v.cluster(path, cluster)
		if cluster.Name == "" {
			continue
		}
		if first, dup := clusterIndex[cluster.Name]; dup {
			v.add(path+".name", fmt.Sprintf("duplicate cluster name %q (also clusters[%d])", cluster.Name, first))
			continue
		}
		clusterIndex[cluster.Name] = i
	}
	return v.err()
}

type validator struct{ errs []error }

func (v *validator) add(path, reason string) {
	v.errs = append(v.errs, &FieldError{Path: path, Reason: reason})
}

func (v *validator) err() error { return errors.Join(v.errs...) }

func (v *validator) cluster(path string, c Cluster) {
	if c.Name == "" {
		v.add(path+".name", "required")
	} else {
		// Cluster names become file names, etcd prefixes and subject tokens, so they are held to DNS labels.
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			v.add(path+".name", fmt.Sprintf("invalid cluster name %q: %s", c.Name, msg))
		}
	}
	v.labels(path+".labels", c.Labels)
	v.taints(path+".taints", c.Taints)
	for i, api := range c.APIs {
		if err := validateAPI(api); err != "" {
			v.add(fmt.Sprintf("%s.apis[%d]", path, i), err)
		}
	}
	nodeOwner := map[string]string{}
	for i, group := range c.Nodes {
		groupPath := fmt.Sprintf("%s.nodes[%d]", path, i)
		v.nodeGroup(groupPath, group)
		if group.Name == "" || group.Count < 0 || group.Count > MaxGroupNodes {
			continue
		}
		for _, name := range group.NodeNames() {
			if owner, dup := nodeOwner[name]; dup {
				v.add(groupPath+".name", fmt.Sprintf("node %q is also produced by %s", name, owner))
				break
			}
			nodeOwner[name] = groupPath
		}
	}
}

func (v *validator) nodeGroup(path string, g NodeGroup) {
	if g.Name == "" {
		v.add(path+".name", "required")
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(g.Name) {
			v.add(path+".name", fmt.Sprintf("invalid node name %q: %s", g.Name, msg))
		}
	}
	if g.Count < 0 || g.Count > MaxGroupNodes {
		v.add(path+".count", fmt.Sprintf("must be 0 to %d, got %d", MaxGroupNodes, g.Count))
	}
	v.labels(path+".labels", g.Labels)
	v.taints(path+".taints", g.Taints)
	if len(g.Allocatable) == 0 {
		v.add(path+".allocatable", "required")
	}
	v.resources(path+".allocatable", g.Allocatable)
	v.resources(path+".requested", g.Requested)
	for _, name := range sortedKeys(g.Requested) {
		requested := g.Requested[name]
		allocatable, ok := g.Allocatable[name]
		switch {
		case !ok:
			v.add(fmt.Sprintf("%s.requested[%s]", path, name), "not in allocatable")
		case requested.Cmp(allocatable) > 0:
			v.add(fmt.Sprintf("%s.requested[%s]", path, name),
				fmt.Sprintf("%s exceeds allocatable %s", requested.String(), allocatable.String()))
		}
	}
}

func (v *validator) resources(path string, list corev1.ResourceList) {
	for _, name := range sortedKeys(list) {
		entry := fmt.Sprintf("%s[%s]", path, name)
		for _, msg := range validation.IsQualifiedName(string(name)) {
			v.add(entry, "invalid resource name: "+msg)
		}
		quantity := list[name]
		if quantity.Sign() < 0 {
			v.add(entry, fmt.Sprintf("must not be negative, got %s", quantity.String()))
		}
	}
}

func (v *validator) labels(path string, labels map[string]string) {
	for _, key := range sortedKeys(labels) {
		for _, msg := range validation.IsQualifiedName(key) {
			v.add(fmt.Sprintf("%s[%s]", path, key), "invalid label key: "+msg)
		}
		for _, msg := range validation.IsValidLabelValue(labels[key]) {
			v.add(fmt.Sprintf("%s[%s]", path, key), fmt.Sprintf("invalid label value %q: %s", labels[key], msg))
		}
	}
}

var taintEffects = []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

func (v *validator) taints(path string, taints []corev1.Taint) {
	for i, taint := range taints {
		taintPath := fmt.Sprintf("%s[%d]", path, i)
		if taint.Key == "" {
			v.add(taintPath+".key", "required")
		} else {
			for _, msg := range validation.IsQualifiedName(taint.Key) {
				v.add(taintPath+".key", "invalid taint key: "+msg)
			}
		}
		for _, msg := range validation.IsValidLabelValue(taint.Value) {
			v.add(taintPath+".value", fmt.Sprintf("invalid taint value %q: %s", taint.Value, msg))
		}
		if !slices.Contains(taintEffects, taint.Effect) {
			v.add(taintPath+".effect", fmt.Sprintf("must be one of NoSchedule, PreferNoSchedule, NoExecute, got %q", taint.Effect))
		}
	}
}

// validateAPI checks "group/version/Kind", or "version/Kind" for the core group, and returns the reason it is
// wrong, or "".
func validateAPI(api string) string {
	parts := strings.Split(api, "/")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
		return fmt.Sprintf("%q: want group/version/Kind, or version/Kind for the core group", api)
	}
	kind := parts[len(parts)-1]
	if kind[0] < 'A' || kind[0] > 'Z' {
		return fmt.Sprintf("%q: kind %q must start with an upper-case letter", api, kind)
	}
	if len(parts) == 3 {
		if msgs := validation.IsDNS1123Subdomain(parts[0]); len(msgs) > 0 {
			return fmt.Sprintf("%q: invalid group %q: %s", api, parts[0], msgs[0])
		}
	}
	return ""
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	return keys
}
