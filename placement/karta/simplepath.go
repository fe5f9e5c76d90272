package karta

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// plainPath is a replicasPath that only walks fields, optionally through one iterator ("[]"),
// optionally with a numeric default: ".spec.replicas", ".spec.replicas // 1",
// ".spec.workerGroupSpecs[].replicas" or ".spec.workerGroupSpecs[] | (.replicas // 1)".
// Such a path names a field a Divide spread can rewrite per cluster.
type plainPath struct {
	segments []string // field names; iterSegment marks the iterator
}

const iterSegment = "\x00[]"

var (
	pathSegmentRE = regexp.MustCompile(`^(?:\.([A-Za-z_][A-Za-z0-9_]*)|\.?\["((?:[^"\\])*)"\]|\."((?:[^"\\])*)"|\[\])`)
	defaultRE     = regexp.MustCompile(`^(.*?)\s*//\s*-?[0-9]+\s*$`)
)

func parsePlainPath(expr string) *plainPath {
	expr = strings.TrimSpace(expr)
	head, tail, piped := strings.Cut(expr, "|")
	if piped {
		// Only "A[] | B" with B a plain relative path (parenthesised or not) qualifies.
		h := parseSegments(stripDefault(strings.TrimSpace(head), false))
		if h == nil || h[len(h)-1] != iterSegment {
			return nil
		}
		t := strings.TrimSpace(tail)
		if strings.HasPrefix(t, "(") && strings.HasSuffix(t, ")") {
			t = strings.TrimSpace(t[1 : len(t)-1])
		}
		rest := parseSegments(stripDefault(t, true))
		if rest == nil || contains(rest, iterSegment) {
			return nil
		}
		return &plainPath{segments: append(h, rest...)}
	}
	segs := parseSegments(stripDefault(expr, true))
	if segs == nil {
		return nil
	}
	iters := 0
	for _, s := range segs {
		if s == iterSegment {
			iters++
		}
	}
	// "A[].b // 1" defaults the whole stream, not each element; it is not a per-instance field.
	if iters > 1 || (iters == 1 && defaultRE.MatchString(expr)) {
		return nil
	}
	return &plainPath{segments: segs}
}

func stripDefault(expr string, allowed bool) string {
	if m := defaultRE.FindStringSubmatch(expr); m != nil {
		if !allowed {
			return ""
		}
		return m[1]
	}
	return expr
}

func parseSegments(expr string) []string {
	if expr == "" || expr[0] != '.' && expr[0] != '[' {
		return nil
	}
	var segs []string
	for expr != "" {
		m := pathSegmentRE.FindStringSubmatch(expr)
		if m == nil {
			return nil
		}
		switch {
		case m[1] != "":
			segs = append(segs, m[1])
		case m[0] == "[]":
			segs = append(segs, iterSegment)
		case strings.Contains(m[0], "["):
			segs = append(segs, m[2])
		default:
			segs = append(segs, m[3])
		}
		expr = expr[len(m[0]):]
	}
	if len(segs) == 0 {
		return nil
	}
	return segs
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// resolve gives the concrete field path of instance index of count instances, replacing the
// iterator by the array index or the map key (gojq iterates maps in sorted key order).
func (p *plainPath) resolve(obj map[string]any, index, count int) ([]string, bool) {
	out := make([]string, 0, len(p.segments))
	var cur any = obj
	iterated := false
	for _, seg := range p.segments {
		if seg != iterSegment {
			out = append(out, seg)
			if m, ok := cur.(map[string]any); ok {
				cur = m[seg]
			} else {
				cur = nil
			}
			continue
		}
		switch x := cur.(type) {
		case []any:
			if len(x) != count {
				return nil, false
			}
			out = append(out, strconv.Itoa(index))
			cur = x[index]
		case map[string]any:
			if len(x) != count {
				return nil, false
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out = append(out, keys[index])
			cur = x[keys[index]]
		default:
			return nil, false
		}
		iterated = true
	}
	if !iterated && count != 1 {
		return nil, false
	}
	return out, true
}
