package simulate

import (
	"bytes"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"

	"github.com/fleetflow/fleetflow/internal/fleetspec"
)

// parseFast decodes data into the File that the general path (checks, then yaml.UnmarshalStrict) gives, or
// reports false for a file it does not handle. On a fleet file of thousands of workloads the general path parses
// every workload three times over (yaml.v2, JSON, and a yaml.v3 tree for the checks). Here the workloads list is
// cut into pieces at its items, each piece parsed once with yaml.v3 on its own core and turned into Go values as
// the general path reads them; the rest of the file, a small part, goes through the checks and the general decoding.
// Anything unusual (an anchor, a tag, a key or scalar whose YAML 1.1 reading is not plain) and any error sends
// the caller to the general path, which then gives its own message with its line numbers.
func parseFast(data []byte) (*File, bool) {
	// yaml.v3 counts \r, NEL, LS and PS as line breaks, which the cutting below does not.
	for _, brk := range []string{"\r", "\u0085", "\u2028", "\u2029"} {
		if bytes.Contains(data, []byte(brk)) {
			return nil, false
		}
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	key := -1
	for i, line := range lines {
		if bytes.HasPrefix(line, []byte("workloads:")) {
			if key >= 0 {
				return nil, false
			}
			key = i
		}
	}
	if key < 0 {
		return nil, false
	}
	// The list runs to the next line that starts a top-level key.
	end := key + 1
	for end < len(lines) && !startsKey(lines[end]) {
		end++
	}
	// Small pieces keep each piece's node tree short-lived: the heap then reuses its memory instead of growing
	// (fresh memory, zeroed and faulted in, cost more than the parse).
	pieces := cutItems(lines[key+1:end], itemsPerPiece)
	if pieces == nil {
		return nil, false
	}
	// A cut inside a quoted scalar or a flow collection leaves one piece unterminated, which fails to parse.
	rest := bytes.Join(append(append([][]byte{}, lines[:key]...), lines[end:]...), nil)

	var wg sync.WaitGroup
	refs := make([][]WorkloadRef, len(pieces))
	oks := make([]bool, len(pieces))
	bareKey := bytes.HasPrefix(lines[key], []byte("workloads:\n"))
	var next atomic.Int64
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(pieces); i = int(next.Add(1) - 1) {
				refs[i], oks[i] = parsePiece(pieces[i], bareKey)
			}
		})
	}
	var f File
	var restOK bool
	wg.Go(func() { restOK = parseRest(rest, &f) })
	wg.Wait()
	if !restOK {
		return nil, false
	}
	for i := range pieces {
		if !oks[i] {
			return nil, false
		}
		f.Workloads = append(f.Workloads, refs[i]...)
	}
	return &f, true
}

// startsKey reports whether line begins a top-level mapping entry (not an item, comment or blank line).
func startsKey(line []byte) bool {
	return len(line) > 0 && line[0] != ' ' && line[0] != '-' && line[0] != '#' && line[0] != '\n'
}

// itemsPerPiece is how many workloads parsePiece parses at once.
const itemsPerPiece = 200

// cutItems cuts the lines of a block sequence into pieces of per items, the first piece starting at the first
// line; nil when the lines are no plain block sequence.
func cutItems(lines [][]byte, per int) [][]byte {
	indent := -1
	var starts []int
	for i, line := range lines {
		trimmed := bytes.TrimLeft(line, " ")
		if indent < 0 {
			if len(trimmed) == 0 || trimmed[0] == '\n' || trimmed[0] == '#' {
				continue
			}
			indent = len(line) - len(trimmed)
		}
		if len(line)-len(trimmed) == indent && (bytes.HasPrefix(trimmed, []byte("- ")) || bytes.HasPrefix(trimmed, []byte("-\n"))) {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return nil
	}
	var pieces [][]byte
	from := 0
	for k := per; ; k += per {
		to := len(lines)
		if k < len(starts) {
			to = starts[k]
		}
		pieces = append(pieces, bytes.Join(lines[from:to], nil))
		if to == len(lines) {
			return pieces
		}
		from = to
	}
}

// parsePiece turns a piece of the workloads list into WorkloadRefs. The key line "workloads:" is only checked
// to be the bare key: the list starts on the next line.
func parsePiece(piece []byte, bareKey bool) ([]WorkloadRef, bool) {
	if !bareKey {
		return nil, false
	}
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(piece, &doc); err != nil || len(doc.Content) != 1 {
		return nil, false
	}
	seq := doc.Content[0]
	if seq.Kind != yamlv3.SequenceNode || seq.Style&yamlv3.TaggedStyle != 0 || seq.Anchor != "" {
		return nil, false
	}
	refs := make([]WorkloadRef, len(seq.Content))
	for i, item := range seq.Content {
		if !workloadRef(item, &refs[i]) {
			return nil, false
		}
	}
	return refs, true
}

// parseRest runs the checks and the general decoding on the file without its workloads.
func parseRest(rest []byte, f *File) bool {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(rest, &doc); err != nil || len(doc.Content) != 1 {
		return false
	}
	root := doc.Content[0]
	if root.Kind != yamlv3.MappingNode {
		return false
	}
	for i := 0; i < len(root.Content); i += 2 {
		if root.Content[i].Value == "workloads" {
			return false // spelt another way than the line cut: the general path sorts it out
		}
	}
	if fleetspec.CheckTree(root, reflect.TypeFor[File]()) != nil {
		return false
	}
	return yaml.UnmarshalStrict(rest, f) == nil
}

func workloadRef(node *yamlv3.Node, ref *WorkloadRef) bool {
	if node.Kind != yamlv3.MappingNode || !plainNode(node) {
		return false
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, ok := stringScalar(node.Content[i])
		if !ok || seen[k] {
			return false
		}
		seen[k] = true
		value := node.Content[i+1]
		switch k {
		case "file", "namespace":
			s, ok := stringScalar(value)
			if !ok {
				return false
			}
			if k == "file" {
				ref.File = s
			} else {
				ref.Namespace = s
			}
		case "object":
			if value.Kind != yamlv3.MappingNode {
				return false
			}
			obj, ok := toValue(value)
			if !ok {
				return false
			}
			ref.Object = obj.(map[string]any)
		default:
			return false // JSON decoding matches field names case-insensitively, and refuses others
		}
	}
	return true
}

// plainNode reports whether node has no anchor, alias, tag or merge: what toValue reads as YAML 1.1 does.
func plainNode(node *yamlv3.Node) bool {
	return node.Kind != yamlv3.AliasNode && node.Anchor == "" && node.Style&yamlv3.TaggedStyle == 0
}

// toValue is the Go value that yaml.Unmarshal (YAML 1.1, through JSON) gives for node in an `any`: maps of
// strings, lists, strings, float64 numbers, booleans and nil.
func toValue(node *yamlv3.Node) (any, bool) {
	if !plainNode(node) {
		return nil, false
	}
	switch node.Kind {
	case yamlv3.MappingNode:
		m := make(map[string]any, len(node.Content)/2)
		for i := 0; i+1 < len(node.Content); i += 2 {
			k, ok := stringScalar(node.Content[i])
			if !ok {
				return nil, false
			}
			if _, dup := m[k]; dup {
				return nil, false
			}
			v, ok := toValue(node.Content[i+1])
			if !ok {
				return nil, false
			}
			m[k] = v
		}
		return m, true
	case yamlv3.SequenceNode:
		list := make([]any, len(node.Content))
		for i, item := range node.Content {
			v, ok := toValue(item)
			if !ok {
				return nil, false
			}
			list[i] = v
		}
		return list, true
	case yamlv3.ScalarNode:
		return scalar(node)
	}
	return nil, false
}

var (
	// yaml11Words are the plain scalars YAML 1.1 reads as booleans or null.
	yaml11Words = map[string]any{
		"y": true, "Y": true, "yes": true, "Yes": true, "YES": true, "on": true, "On": true, "ON": true,
		"true": true, "True": true, "TRUE": true,
		"n": false, "N": false, "no": false, "No": false, "NO": false, "off": false, "Off": false, "OFF": false,
		"false": false, "False": false, "FALSE": false,
		"": nil, "~": nil, "null": nil, "Null": nil, "NULL": nil,
	}
	// Numbers read the same in YAML 1.1 and by strconv, short enough for a float64 to hold exactly.
	plainInt     = regexp.MustCompile(`^(0|-?[1-9][0-9]{0,14})$`)
	plainDecimal = regexp.MustCompile(`^-?(0|[1-9][0-9]{0,14})\.[0-9]{1,15}$`)
	// Digits then letters other than an exponent, such as 16Gi or 500m: no number, no date, a string.
	plainQuantity = regexp.MustCompile(`^[1-9][0-9]*[A-DF-Za-df-z][A-Za-z]*$`)
)

// scalar reads a scalar node as YAML 1.1 would into an `any`; false for a spelling it does not know for sure.
func scalar(node *yamlv3.Node) (any, bool) {
	if node.Style&(yamlv3.DoubleQuotedStyle|yamlv3.SingleQuotedStyle|yamlv3.LiteralStyle|yamlv3.FoldedStyle) != 0 {
		return node.Value, true
	}
	v := node.Value
	if word, ok := yaml11Words[v]; ok {
		return word, true
	}
	switch c := v[0]; {
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		return v, true
	case plainInt.MatchString(v) || plainDecimal.MatchString(v):
		f, err := strconv.ParseFloat(v, 64)
		return f, err == nil
	case plainQuantity.MatchString(v):
		return v, true
	}
	return nil, false
}

// stringScalar is a scalar that YAML 1.1 reads as a string.
func stringScalar(node *yamlv3.Node) (string, bool) {
	if node.Kind != yamlv3.ScalarNode || !plainNode(node) {
		return "", false
	}
	v, ok := scalar(node)
	s, isString := v.(string)
	return s, ok && isString
}
