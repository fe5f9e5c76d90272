package jsondec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit, so the same documents are refused.
const maxDepth = 10000

// SyntaxError is a malformed document, with the byte offset where decoding stopped.
type SyntaxError struct {
	Offset int
	msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("json: %s at offset %d", e.msg, e.Offset) }

// Decode decodes one JSON value, with nothing but whitespace after it.
func Decode(data []byte) (any, error) {
	d := decoder{data: data}
	return d.document()
}

// DecodeObject decodes a JSON object; any other value is an error.
func DecodeObject(data []byte) (map[string]any, error) {
	m, _, _, err := DecodeObjectKeeping(data, "")
	return m, err
}

// DecodeObjectKeeping decodes a JSON object like DecodeObject, and also returns the bytes of the value of its
// member named field without regard to case, as encoding/json matches a struct field's name, exactly as they
// are in data (part of data, not a copy), and how many members are so named. With several, kept is the last
// one's, but encoding/json would merge their objects into the field, which no one member's bytes hold: the
// caller decodes such a document another way. kept is nil when there is none.
func DecodeObjectKeeping(data []byte, field string) (m map[string]any, kept []byte, matches int, err error) {
	d := decoder{data: data, keep: field}
	v, err := d.document()
	if err != nil {
		return nil, nil, 0, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, 0, errors.New("json: cannot decode a non-object value into map[string]any")
	}
	return m, d.kept, d.matches, nil
}

type decoder struct {
	data  []byte
	pos   int
	depth int
	// scratch holds unescaped string bytes between strings, so escapes cost no allocation of their own.
	scratch []byte
	// keep names the member of the top-level object whose value's bytes go to kept, without regard to case;
	// "" keeps nothing. matches counts the members so named.
	keep    string
	kept    []byte
	matches int
}

// document decodes the one value of the whole input, with nothing but whitespace around it.
func (d *decoder) document() (any, error) {
	d.skipSpace()
	v, err := d.value()
	if err != nil {
		return nil, err
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return nil, d.fail("invalid character " + quoteByte(d.data[d.pos]) + " after top-level value")
	}
	return v, nil
}

func (d *decoder) fail(msg string) error { return &SyntaxError{Offset: d.pos, msg: msg} }

func (d *decoder) unexpectedEnd() error { return d.fail("unexpected end of JSON input") }

func quoteByte(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	return strconv.QuoteRune(rune(c))
}

func (d *decoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *decoder) value() (any, error) {
	if d.pos >= len(d.data) {
		return nil, d.unexpectedEnd()
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object()
	case c == '[':
		return d.array()
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	default:
		return nil, d.fail("invalid character " + quoteByte(c) + " looking for beginning of value")
	}
}

func (d *decoder) literal(word string) error {
	for i := 0; i < len(word); i++ {
		if d.pos >= len(d.data) {
			return d.unexpectedEnd()
		}
		if d.data[d.pos] != word[i] {
			return d.fail("invalid character " + quoteByte(d.data[d.pos]) + " in literal " + word)
		}
		d.pos++
	}
	return nil
}

func (d *decoder) enter() error {
	d.depth++
	if d.depth > maxDepth {
		return d.fail("exceeded max depth")
	}
	return nil
}

func (d *decoder) object() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '{'
	m := map[string]any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.depth--
		return m, nil
	}
	for {
		if d.pos >= len(d.data) {
			return nil, d.unexpectedEnd()
		}
		if d.data[d.pos] != '"' {
			return nil, d.fail("invalid character " + quoteByte(d.data[d.pos]) + " looking for beginning of object key string")
		}
		key, err := d.key()
		if err != nil {
			return nil, err
		}
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.unexpectedEnd()
		}
		if d.data[d.pos] != ':' {
			return nil, d.fail("invalid character " + quoteByte(d.data[d.pos]) + " after object key")
		}
		d.pos++
		d.skipSpace()
		start := d.pos
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		if d.depth == 1 && d.keep != "" && strings.EqualFold(key, d.keep) {
			d.kept = d.data[start:d.pos]
			d.matches++
		}
		m[key] = v
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.unexpectedEnd()
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case '}':
			d.pos++
			d.depth--
			return m, nil
		default:
			return nil, d.fail("invalid character " + quoteByte(d.data[d.pos]) + " after object key:value pair")
		}
	}
}

func (d *decoder) array() (any, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	d.pos++ // '['
	a := []any{}
	d.skipSpace()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		d.depth--
		return a, nil
	}
	for {
		v, err := d.value()
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.skipSpace()
		if d.pos >= len(d.data) {
			return nil, d.unexpectedEnd()
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.skipSpace()
		case ']':
			d.pos++
			d.depth--
			return a, nil
		default:
			return nil, d.fail("invalid character " + quoteByte(d.data[d.pos]) + " after array element")
		}
	}
}

// number reads a number with JSON's grammar and converts it as encoding/json does for an `any` target.
func (d *decoder) number() (any, error) {
	start := d.pos
	if d.data[d.pos] == '-' {
		d.pos++
	}
	if d.pos >= len(d.data) {
		return nil, d.unexpectedEnd()
	}
	switch c := d.data[d.pos]; {
	case c == '0':
		d.pos++
	case c >= '1' && c <= '9':
		d.digits()
	default:
		return nil, d.fail("invalid character " + quoteByte(c) + " in numeric literal")
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if d.pos >= len(d.data) {
			return nil, d.unexpectedEnd()
		}
		if c := d.data[d.pos]; c < '0' || c > '9' {
			return nil, d.fail("invalid character " + quoteByte(c) + " after decimal point in numeric literal")
		}
		d.digits()
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if d.pos >= len(d.data) {
			return nil, d.unexpectedEnd()
		}
		if c := d.data[d.pos]; c < '0' || c > '9' {
			return nil, d.fail("invalid character " + quoteByte(c) + " in exponent of numeric literal")
		}
		d.digits()
	}
	text := d.data[start:d.pos]
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		return nil, fmt.Errorf("json: cannot decode number %s into a float64: %w", text, err)
	}
	return f, nil
}

func (d *decoder) digits() {
	for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
		d.pos++
	}
}

// commonKeys are object keys that Kubernetes objects repeat in every document; decoding one of them reuses
// this string instead of allocating a copy.
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range []string{
		"apiVersion", "kind", "metadata", "name", "namespace", "labels", "annotations", "uid", "resourceVersion",
		"generation", "creationTimestamp", "ownerReferences", "finalizers", "managedFields", "spec", "status",
		"template", "replicas", "selector", "matchLabels", "matchExpressions", "key", "operator", "values", "value",
		"containers", "initContainers", "image", "imagePullPolicy", "command", "args", "env", "ports",
		"containerPort", "protocol", "resources", "requests", "limits", "cpu", "memory", "nvidia.com/gpu",
		"ephemeral-storage", "volumeMounts", "mountPath", "volumes", "nodeSelector", "affinity", "tolerations",
		"effect", "restartPolicy", "serviceAccountName", "priorityClassName", "schedulerName", "conditions",
		"type", "reason", "message", "lastTransitionTime", "phase", "workerGroupSpecs", "headGroupSpec",
		"groupName", "minReplicas", "maxReplicas", "rayStartParams", "replicatedJobs", "leaderWorkerTemplate",
		"workerTemplate", "leaderTemplate", "size", "replicaSpecs",
	} {
		m[k] = k
	}
	return m
}()

// key reads an object key, reusing the string of a common one.
func (d *decoder) key() (string, error) {
	end := d.pos + 1
	for end < len(d.data) && d.data[end] != '"' && d.data[end] != '\\' && d.data[end] >= 0x20 && d.data[end] < utf8.RuneSelf {
		end++
	}
	if end < len(d.data) && d.data[end] == '"' {
		if k, ok := commonKeys[string(d.data[d.pos+1:end])]; ok {
			d.pos = end + 1
			return k, nil
		}
	}
	return d.str()
}

// str reads a string at d.pos (its opening quote). A string without escapes or invalid UTF-8 is copied
// once; otherwise it is unescaped as encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD.
func (d *decoder) str() (string, error) {
	d.pos++ // opening quote
	start := d.pos
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			s := string(d.data[start:d.pos])
			d.pos++
			return s, nil
		case c == '\\' || c >= utf8.RuneSelf:
			return d.slowStr(start)
		case c < 0x20:
			return "", d.fail("invalid character " + quoteByte(c) + " in string literal")
		default:
			d.pos++
		}
	}
	return "", d.unexpectedEnd()
}

func (d *decoder) slowStr(start int) (string, error) {
	d.scratch = append(d.scratch[:0], d.data[start:d.pos]...)
	out := d.scratch
	defer func() { d.scratch = out[:0] }()
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			return string(out), nil
		case c < 0x20:
			return "", d.fail("invalid character " + quoteByte(c) + " in string literal")
		case c == '\\':
			d.pos++
			if d.pos >= len(d.data) {
				return "", d.unexpectedEnd()
			}
			esc := d.data[d.pos]
			d.pos++
			switch esc {
			case '"', '\\', '/':
				out = append(out, esc)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, err := d.hex4()
				if err != nil {
					return "", err
				}
				if utf16.IsSurrogate(r) {
					// A high surrogate followed by an escaped low one is one rune; anything else is invalid.
					if d.pos+6 <= len(d.data) && d.data[d.pos] == '\\' && d.data[d.pos+1] == 'u' {
						save := d.pos
						d.pos += 2
						r2, err := d.hex4()
						if err != nil {
							return "", err
						}
						if combined := utf16.DecodeRune(r, r2); combined != utf8.RuneError {
							out = utf8.AppendRune(out, combined)
							continue
						}
						d.pos = save
					}
					r = utf8.RuneError
				}
				out = utf8.AppendRune(out, r)
			default:
				d.pos--
				return "", d.fail("invalid character " + quoteByte(esc) + " in string escape code")
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			d.pos++
		default:
			r, size := utf8.DecodeRune(d.data[d.pos:])
			d.pos += size
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
				continue
			}
			out = append(out, d.data[d.pos-size:d.pos]...)
		}
	}
	return "", d.unexpectedEnd()
}

// hex4 reads the four hex digits of a \u escape.
func (d *decoder) hex4() (rune, error) {
	var r rune
	for i := 0; i < 4; i++ {
		if d.pos >= len(d.data) {
			return 0, d.unexpectedEnd()
		}
		c := d.data[d.pos]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, d.fail("invalid character " + quoteByte(c) + " in \\u hexadecimal character escape")
		}
		d.pos++
	}
	return r, nil
}
