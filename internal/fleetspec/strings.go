package fleetspec

import (
	"fmt"
	"reflect"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// yaml11Booleans are the plain scalars YAML 1.1, which fleet files are decoded as, reads as booleans and YAML 1.2
// does not: decoded into a string they become "true" or "false". (true and false are booleans in both, and read
// back as what they say.)
var yaml11Booleans = map[string]bool{}

func init() {
	for _, word := range []string{"y", "yes", "n", "no", "on", "off"} {
		for _, form := range []string{word, strings.ToUpper(word), strings.ToUpper(word[:1]) + word[1:]} {
			yaml11Booleans[form] = true
		}
	}
}

// CheckStrings reports, with their paths, the unquoted values YAML 1.1 reads as booleans (y, n, yes, no, on,
// off) where target, the type the document decodes into, holds a string, as a value or a map key. Decoding
// would turn them into "false" or "true" without a word: a node named n into one named false, a label gpu: on
// into gpu=true, which no selector for "on" matches. It returns nil when there are none, or when the document
// does not parse (decoding reports that).
func CheckStrings(data []byte, target reflect.Type) error {
	root := parseNode(data)
	if root == nil {
		return nil
	}
	var v validator
	checkStrings(&v, root, target, "")
	return v.err()
}

// parseNode is the root node of data's first document; nil when it does not parse or is empty.
func parseNode(data []byte) *yaml.Node {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil
	}
	return doc.Content[0]
}

func resolveAlias(node *yaml.Node) *yaml.Node {
	for node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	return node
}

// field is the value of key in a mapping node; nil when node is no mapping or lacks key.
func field(node *yaml.Node, key string) *yaml.Node {
	if node == nil {
		return nil
	}
	node = resolveAlias(node)
	if node.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(node.Content); i += 2 {
		if node.Content[i].Value == key {
			return resolveAlias(node.Content[i+1])
		}
	}
	return nil
}

// items are the entries of a sequence node; none when node is no sequence.
func items(node *yaml.Node) []*yaml.Node {
	if node == nil || node.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, len(node.Content))
	for i, item := range node.Content {
		out[i] = resolveAlias(item)
	}
	return out
}

func checkStrings(v *validator, node *yaml.Node, t reflect.Type, path string) {
	node = resolveAlias(node)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		if readAsBoolean(node) {
			v.add(path, notAString(node.Value))
		}
	case reflect.Struct:
		if node.Kind != yaml.MappingNode {
			return
		}
		values := map[string]*yaml.Node{}
		for i := 0; i+1 < len(node.Content); i += 2 {
			values[node.Content[i].Value] = node.Content[i+1]
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-" || !f.IsExported():
			case f.Anonymous && name == "":
				checkStrings(v, node, f.Type, path) // inlined: its fields are this object's
			default:
				if name == "" {
					name = f.Name
				}
				if value, ok := values[name]; ok {
					checkStrings(v, value, f.Type, joinPath(path, name))
				}
			}
		}
	case reflect.Map:
		if node.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(node.Content); i += 2 {
			key := node.Content[i]
			entry := fmt.Sprintf("%s[%s]", path, key.Value)
			if t.Key().Kind() == reflect.String && readAsBoolean(key) {
				v.add(entry, "key "+notAString(key.Value))
			}
			checkStrings(v, node.Content[i+1], t.Elem(), entry)
		}
	case reflect.Slice, reflect.Array:
		if node.Kind != yaml.SequenceNode {
			return
		}
		for i, item := range node.Content {
			checkStrings(v, item, t.Elem(), fmt.Sprintf("%s[%d]", path, i))
		}
	}
}

// readAsBoolean reports whether YAML 1.1 reads node, a plain scalar, as a boolean that YAML 1.2 does not.
func readAsBoolean(node *yaml.Node) bool {
	return node.Kind == yaml.ScalarNode && node.Style == 0 && yaml11Booleans[node.Value]
}

func notAString(value string) string {
	return fmt.Sprintf("want a string, got %s, which YAML reads as a boolean (quote it: YAML reads y, n, yes, no, on and off as booleans)", value)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
