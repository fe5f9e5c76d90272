package simulate

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/api/v1alpha1"
	"github.com/fleetflow/fleetflow/internal/fleetspec"
	"github.com/fleetflow/fleetflow/placement/karta"
	"github.com/fleetflow/fleetflow/placement/structs"
)

// File is a fleet file for simulate: a fleetspec.Fleet extended with what placement needs. The fleet's
// fields are spelt out rather than embedded: YAML decoding reads a field by its Go type only through named
// fields, and an embedded one turned a node named n into the boolean false.
type File struct {
	Namespaces map[string]fleetspec.Namespace `json:"namespaces,omitempty"`
	Clusters   []fleetspec.Cluster            `json:"clusters"`
	Policies   []v1alpha1.SchedulePolicy      `json:"policies,omitempty"`
	// ResourceInterfaces are extra RI objects; they override the built-ins for their kinds.
	ResourceInterfaces []map[string]any `json:"resourceInterfaces,omitempty"`
	// Workloads are placed in this order.
	Workloads []WorkloadRef `json:"workloads"`
}

// WorkloadRef names a workload CR: a file relative to the fleet file, or the object inline.
type WorkloadRef struct {
	File   string         `json:"file,omitempty"`
	Object map[string]any `json:"object,omitempty"`
	// Namespace is where a CR that names none goes, as kubectl apply -n puts it (else "default"), so an upstream
	// sample can be simulated in a namespace that policies select; a CR naming another namespace is an error.
	Namespace string `json:"namespace,omitempty"`
}

// FieldError locates a problem of the fleet file by a field path such as "policies[0].spec.scoring".
type FieldError struct {
	Path   string
	Reason string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Reason }

// Fleet is the fleet part of the file.
func (f *File) Fleet() fleetspec.Fleet {
	return fleetspec.Fleet{Namespaces: f.Namespaces, Clusters: f.Clusters}
}

// Input is a loaded fleet file: the file itself and each workload object, resolved.
type Input struct {
	Source  string
	File    *File
	Objects []map[string]any
	// ObjectSources names where each object came from, for messages.
	ObjectSources []string
	// SkippedNamespaces matches the control-plane namespaces whose workloads fleetflow leaves alone
	// (--skip-namespaces); nil skips none. Load leaves it nil; the command sets fleetflow's default.
	SkippedNamespaces *regexp.Regexp
}

// Load reads and checks a fleet file. Every problem is reported with the path of the bad field.
func Load(path string) (*Input, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read fleet file: %w", err)
	}
	return Parse(data, path, filepath.Dir(path))
}

// Parse decodes a fleet file; workload files are resolved against baseDir.
func Parse(data []byte, source, baseDir string) (*Input, error) {
	if err := fleetspec.OneDocument(data); err != nil {
		return nil, fmt.Errorf("fleet file %s: %w", source, err)
	}
	f, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("fleet file %s: %w", source, err)
	}
	var errs []error
	fleet := f.Fleet()
	if err := fleet.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(f.Workloads) == 0 {
		errs = append(errs, &FieldError{Path: "workloads", Reason: "required: nothing to place; list the CRs as - file: CR.yaml (relative to the fleet file) or - object: {apiVersion: ..., kind: ..., ...}"})
	}
	policyAt := map[string]int{}
	for i, p := range f.Policies {
		if j, dup := policyAt[p.Name]; dup && p.Name != "" {
			errs = append(errs, &FieldError{Path: fmt.Sprintf("policies[%d].metadata.name", i),
				Reason: fmt.Sprintf("%q is also the name of policies[%d]; a second policy of a name would replace the first", p.Name, j)})
			continue
		}
		policyAt[p.Name] = i
	}
	in := &Input{Source: source, File: &f}
	workloadAt := map[string]int{}
	for i, ref := range f.Workloads {
		path := fmt.Sprintf("workloads[%d]", i)
		obj, where, err := resolve(ref, baseDir)
		if err != nil {
			errs = append(errs, &FieldError{Path: path, Reason: err.Error()})
			continue
		}
		if err := karta.CheckTypeMeta(obj); err != nil {
			errs = append(errs, &FieldError{Path: path, Reason: err.Error()})
			continue
		}
		if fe := stringMetadata(obj); fe != nil {
			errs = append(errs, &FieldError{Path: path + "." + fe.Path, Reason: fe.Reason})
			continue
		}
		if err := setNamespace(obj, ref.Namespace); err != nil {
			errs = append(errs, &FieldError{Path: path + ".namespace", Reason: err.Error()})
			continue
		}
		key := defaultNamespace(obj)
		if j, dup := workloadAt[key]; dup {
			errs = append(errs, &FieldError{Path: path, Reason: fmt.Sprintf("%s is also workloads[%d]; the API server holds one object of a name", key, j)})
			continue
		}
		workloadAt[key] = i
		in.Objects = append(in.Objects, obj)
		in.ObjectSources = append(in.ObjectSources, where)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("fleet file %s: %w", source, errors.Join(errs...))
	}
	return in, nil
}

// decode checks and decodes data: by parseFast when it can, else by the general path.
func decode(data []byte) (File, error) {
	if f, ok := parseFast(data); ok {
		return *f, nil
	}
	// The checks and the decoding each parse the whole file; they share nothing, so they run side by side. A
	// check's error, more precise, comes first.
	var f File
	decoded := make(chan error, 1)
	go func() { decoded <- yaml.UnmarshalStrict(data, &f) }()
	checkErr := fleetspec.CheckDocument(data, reflect.TypeFor[File]())
	decodeErr := <-decoded
	if checkErr != nil {
		return File{}, checkErr
	}
	return f, decodeErr
}

// stringMetadata checks that the workload has a name and that the metadata placement reads are strings, as
// the API server would insist. YAML
// reads an unquoted y, n, yes, no, on or off as a boolean, and a label silently dropped would change which
// policy takes the workload.
func stringMetadata(obj map[string]any) *FieldError {
	raw, present := obj["metadata"]
	meta, ok := raw.(map[string]any)
	switch {
	case present && !ok:
		return &FieldError{Path: "metadata", Reason: fmt.Sprintf("want an object, got %T %v", raw, raw)}
	case !ok:
		return &FieldError{Path: "metadata.name", Reason: "required"}
	}
	for _, field := range []string{"name", "namespace"} {
		if v, present := meta[field]; present {
			if _, isString := v.(string); !isString {
				return &FieldError{Path: "metadata." + field, Reason: notAString(v)}
			}
		}
	}
	if name, _ := meta["name"].(string); name == "" {
		return &FieldError{Path: "metadata.name", Reason: "required"}
	}
	for _, field := range []string{"labels", "annotations"} {
		raw, present := meta[field]
		values, ok := raw.(map[string]any)
		if present && raw != nil && !ok {
			return &FieldError{Path: "metadata." + field, Reason: fmt.Sprintf("want a map of strings, got %T %v", raw, raw)}
		}
		for _, k := range slices.Sorted(maps.Keys(values)) {
			if _, isString := values[k].(string); !isString {
				return &FieldError{Path: "metadata." + field + "[" + k + "]", Reason: notAString(values[k])}
			}
		}
	}
	return nil
}

func notAString(v any) string {
	return fmt.Sprintf("want a string, got %T %v (quote it: YAML reads y, n, yes, no, on and off as booleans)", v, v)
}

// setNamespace puts a workload that names no namespace in namespace (none given: left as is), and refuses one
// that names another, as kubectl apply -n does.
func setNamespace(obj map[string]any, namespace string) error {
	if namespace == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(namespace); len(msgs) > 0 {
		return fmt.Errorf("invalid namespace %q: %s", namespace, strings.Join(msgs, "; "))
	}
	meta, _ := obj["metadata"].(map[string]any) // stringMetadata made sure it is an object
	if own, _ := meta["namespace"].(string); own != "" && own != namespace {
		return fmt.Errorf("%q, but the object names namespace %q", namespace, own)
	}
	meta["namespace"] = namespace
	return nil
}

// clusterScoped are the kinds a level-1 policy copies that live outside any namespace. The placer sees them
// without one, so no namespace selector takes them, and simulate must not put them in default. Other kinds are
// taken as namespaced: a fleet file has no API server to ask.
var clusterScoped = map[schema.GroupKind]bool{
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:               true,
	{Group: "", Kind: "Namespace"}:                                                  true,
	{Group: "", Kind: "PersistentVolume"}:                                           true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                       true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                 true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                             true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                    true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                              true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}: true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:   true,
}

// defaultNamespace puts a namespaced workload without a namespace in "default", as kubectl apply would, so
// namespace selectors and labels of the fleet file's namespaces apply to it; it returns the object's identity.
func defaultNamespace(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	kind, _ := obj["kind"].(string)
	apiVersion, _ := obj["apiVersion"].(string)
	if ns, _ := meta["namespace"].(string); ns == "" && !clusterScoped[schema.GroupKind{Group: structs.APIGroup(apiVersion), Kind: kind}] {
		meta["namespace"] = "default"
	}
	return fmt.Sprintf("%s/%s/%v/%v", structs.APIGroup(apiVersion), kind, meta["namespace"], meta["name"])
}

func resolve(ref WorkloadRef, baseDir string) (map[string]any, string, error) {
	switch {
	case ref.File != "" && ref.Object != nil:
		return nil, "", errors.New("set either file or object, not both")
	case ref.Object != nil:
		return ref.Object, "inline object", nil
	case ref.File == "":
		return nil, "", errors.New("set file or object")
	}
	p := ref.File
	if !filepath.IsAbs(p) {
		p = filepath.Join(baseDir, p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, "", fmt.Errorf("file: %w", err)
	}
	obj, err := karta.ParseObject(data, ref.File)
	if err != nil {
		return nil, "", err
	}
	return obj, ref.File, nil
}
