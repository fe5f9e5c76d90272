package karta

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// yamlLineRE finds the document-relative line number in a YAML parser error.
var yamlLineRE = regexp.MustCompile(`line (\d+)`)

// ParseResourceInterfaces reads one or more RIs from YAML or JSON (documents separated by "---").
// Empty documents are skipped. Errors name the source and the line where the bad document or
// YAML token is, so a user can find it in the file.
func ParseResourceInterfaces(data []byte, source string) ([]*ResourceInterface, error) {
	var out []*ResourceInterface
	for _, doc := range splitDocuments(data) {
		if isBlankDocument(doc.text) {
			continue
		}
		jsonData, err := yaml.YAMLToJSON(doc.text)
		if err != nil {
			return nil, newYAMLError(source, doc.startLine, err)
		}
		if bytes.Equal(bytes.TrimSpace(jsonData), []byte("null")) {
			continue
		}
		ri := &ResourceInterface{}
		if err := json.Unmarshal(jsonData, ri); err != nil {
			return nil, fmt.Errorf("%s:%d: document is not a ResourceInterface: %w", source, doc.startLine, err)
		}
		if ri.Kind != "" && ri.Kind != KindRI {
			return nil, fmt.Errorf("%s:%d: kind %q is not %s", source, doc.startLine, ri.Kind, KindRI)
		}
		if ri.APIVersion != "" && ri.APIVersion != Group+"/"+Version {
			return nil, fmt.Errorf("%s:%d: apiVersion %q is not %s/%s", source, doc.startLine, ri.APIVersion, Group, Version)
		}
		ri.Warnings = unknownSpecFields(jsonData)
		out = append(out, ri)
	}
	return out, nil
}

// unknownSpecFields names the fields of an RI's spec that the engine does not know, such as a misspelt
// specDefinition, which would otherwise drop a component without a word. They are warnings, not errors, so an
// RI written for a newer Karta still loads.
func unknownSpecFields(jsonData []byte) []string {
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	if err := json.Unmarshal(jsonData, &obj); err != nil || len(obj.Spec) == 0 {
		return nil
	}
	var spec ResourceInterfaceSpec
	strict, err := sigsjson.UnmarshalStrict(obj.Spec, &spec)
	if err != nil {
		return nil // the lenient decode above already accepted it; a type error is reported there
	}
	var out []string
	for _, e := range strict {
		out = append(out, "spec: "+e.Error()+" (ignored)")
	}
	return out
}

type document struct {
	text      []byte
	startLine int // 1-based line of the document's first line in the whole input
}

// splitDocuments cuts a YAML stream at "---" separator lines, keeping each document's start line.
func splitDocuments(data []byte) []document {
	var docs []document
	lines := bytes.SplitAfter(data, []byte("\n"))
	start := 1
	var cur []byte
	for i, line := range lines {
		trimmed := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(trimmed, []byte("---")) || bytes.HasPrefix(trimmed, []byte("--- ")) {
			docs = append(docs, document{text: cur, startLine: start})
			cur = nil
			start = i + 2
			continue
		}
		cur = append(cur, line...)
	}
	docs = append(docs, document{text: cur, startLine: start})
	return docs
}

func isBlankDocument(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

// YAMLError is an RI file that is not valid YAML; Line is 1-based in the whole file.
type YAMLError struct {
	Source string
	Line   int
	Reason string
	Err    error
}

func (e *YAMLError) Error() string {
	return fmt.Sprintf("%s:%d: invalid YAML: %s", e.Source, e.Line, e.Reason)
}

func (e *YAMLError) Unwrap() error { return e.Err }

// newYAMLError translates the parser's document-relative line into a file line.
func newYAMLError(source string, docStart int, err error) *YAMLError {
	msg := err.Error()
	if i := strings.LastIndex(msg, "yaml: "); i >= 0 {
		msg = msg[i+len("yaml: "):]
	}
	line := docStart
	if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
		if n, convErr := strconv.Atoi(msg[m[2]:m[3]]); convErr == nil {
			line = docStart + n - 1
			msg = strings.TrimPrefix(msg[m[1]:], ": ")
		}
	}
	return &YAMLError{Source: source, Line: line, Reason: msg, Err: err}
}

// ParsedObject is one object of a YAML or JSON stream, with the line its document starts on.
type ParsedObject struct {
	Object map[string]any
	Line   int
	// document is the object's document, item its index among a List's items (-1 when it is no item).
	document []byte
	item     int
}

// LineOf is the line in the whole input of the field at path (as AnalysisError.Path writes it:
// spec.pytorchReplicaSpecs.Worker.replicas, containers[web], metadata.annotations[a.b/c]), or the line its
// document starts on when the field is not found.
func (p ParsedObject) LineOf(path string) int {
	var root yamlv3.Node
	if len(p.document) == 0 || yamlv3.Unmarshal(p.document, &root) != nil || len(root.Content) == 0 {
		return p.Line
	}
	node := root.Content[0]
	if p.item >= 0 {
		if _, node = mappingValue(node, "items"); node == nil || node.Kind != yamlv3.SequenceNode || p.item >= len(node.Content) {
			return p.Line
		}
		node = node.Content[p.item]
	}
	line := node.Line
	for _, step := range fieldSteps(path) {
		var key *yamlv3.Node
		switch node.Kind {
		case yamlv3.MappingNode:
			key, node = mappingValue(node, step)
		case yamlv3.SequenceNode:
			node = sequenceElement(node, step)
			key = node
		default:
			node = nil
		}
		if node == nil {
			return p.Line
		}
		line = key.Line // a field's line is its key's: a block value starts on the next
	}
	return p.Line + line - 1
}

// fieldSteps cuts a field path into its keys and list elements: a.b[c.d].e is a, b, c.d, e.
func fieldSteps(path string) []string {
	var steps []string
	for path != "" {
		switch path[0] {
		case '.':
			path = path[1:]
		case '[':
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return append(steps, path[1:])
			}
			steps, path = append(steps, path[1:end]), path[end+1:]
		default:
			end := strings.IndexAny(path, ".[")
			if end < 0 {
				end = len(path)
			}
			steps, path = append(steps, path[:end]), path[end:]
		}
	}
	return steps
}

// mappingValue is the key node named key of a mapping node, and its value; nils when there is none.
func mappingValue(node *yamlv3.Node, key string) (*yamlv3.Node, *yamlv3.Node) {
	if node.Kind != yamlv3.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return node.Content[i], node.Content[i+1]
		}
	}
	return nil, nil
}

// sequenceElement is the element named step (its name field), or at index step.
func sequenceElement(node *yamlv3.Node, step string) *yamlv3.Node {
	for _, e := range node.Content {
		if _, name := mappingValue(e, "name"); name != nil && name.Value == step {
			return e
		}
	}
	if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(node.Content) {
		return node.Content[i]
	}
	return nil
}

// CheckName refuses an object with neither metadata.name nor metadata.generateName: the apiserver would, and
// placement names every object it reports on.
func CheckName(obj map[string]any) error {
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	generateName, _ := meta["generateName"].(string)
	if name == "" && generateName == "" {
		return errors.New("metadata.name: required (or metadata.generateName, for kubectl create)")
	}
	return nil
}

// ParseObjects reads every Kubernetes object (YAML or JSON) of a stream, in order: the documents between
// "---" lines, and the items of a List (what `kubectl get -o yaml` prints for several objects). Blank
// documents are skipped; a stream with none is an error.
func ParseObjects(data []byte, source string) ([]ParsedObject, error) {
	var found []ParsedObject
	for _, doc := range splitDocuments(data) {
		if isBlankDocument(doc.text) {
			continue
		}
		jsonData, err := yaml.YAMLToJSON(doc.text)
		if err != nil {
			return nil, newYAMLError(source, doc.startLine, err)
		}
		var obj map[string]any
		if err := json.Unmarshal(jsonData, &obj); err != nil {
			return nil, fmt.Errorf("%s:%d: not a Kubernetes object: %w", source, doc.startLine, err)
		}
		if obj == nil {
			continue
		}
		kind, _ := obj["kind"].(string)
		items, isList := obj["items"].([]any)
		if !isList || !strings.HasSuffix(kind, "List") {
			found = append(found, ParsedObject{Object: obj, Line: doc.startLine, document: doc.text, item: -1})
			continue
		}
		for n, item := range items {
			itemObj, ok := item.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s:%d: items[%d]: not an object", source, doc.startLine, n)
			}
			// A typed list from the API (DeploymentList) leaves its items' apiVersion and kind out: they are the list's.
			if _, has := itemObj["kind"]; !has && kind != "List" {
				itemObj["kind"] = strings.TrimSuffix(kind, "List")
				if _, has := itemObj["apiVersion"]; !has {
					itemObj["apiVersion"] = obj["apiVersion"]
				}
			}
			found = append(found, ParsedObject{Object: itemObj, Line: doc.startLine, document: doc.text, item: n})
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: no object", source)
	}
	return found, nil
}

// ParseObject reads one Kubernetes object (YAML or JSON) into its unstructured form. A stream with
// several objects is rejected: simulate's workloads name one object per file.
func ParseObject(data []byte, source string) (map[string]any, error) {
	objects, err := ParseObjects(data, source)
	if err != nil {
		return nil, err
	}
	if len(objects) > 1 {
		return nil, fmt.Errorf("%s:%d: more than one object; one CR is expected", source, objects[1].Line)
	}
	return objects[0].Object, nil
}
