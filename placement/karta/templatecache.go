package karta

import (
	"fmt"
	"hash/maphash"
	"math"
	"math/big"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Decoding a pod template into the Kubernetes API types costs tens of microseconds, most of an
// analysis. A CR is analyzed again on every update and retry, and its templates rarely change, so
// decoded templates are kept by a hash of their content. Entries are shared between analyses,
// which is safe because an Analysis (its PodTemplate and PodRequests included) is immutable.

// templateCacheSize bounds the cache; when full it is emptied, which keeps memory bounded without
// bookkeeping and costs one decode per template afterwards.
const templateCacheSize = 4096

type decodedTemplate struct {
	template *corev1.PodTemplateSpec
	requests corev1.ResourceList
}

// templateKey is a 64-bit content hash plus the number of values hashed; with at most
// templateCacheSize entries the chance that two different templates share a key is below 1e-12.
type templateKey struct {
	hash  uint64
	nodes int
}

type templateCache struct {
	mu      sync.Mutex
	entries map[templateKey]*decodedTemplate
}

var sharedTemplates = &templateCache{entries: map[templateKey]*decodedTemplate{}}

func (tc *templateCache) get(k templateKey) (*decodedTemplate, bool) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	d, ok := tc.entries[k]
	return d, ok
}

func (tc *templateCache) put(k templateKey, d *decodedTemplate) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(tc.entries) >= templateCacheSize {
		clear(tc.entries)
	}
	tc.entries[k] = d
}

var hashSeed = maphash.MakeSeed()

// contentKey hashes a jq value. Map entries are combined with addition so the key does not depend
// on Go's map iteration order; form keeps a PodSpec and a PodTemplateSpec of the same content apart.
func contentKey(form specForm, v any) templateKey {
	var nodes int
	h := hashValue(v, &nodes, uint64(form)*0x9e3779b97f4a7c15+1)
	return templateKey{hash: h, nodes: nodes}
}

func mix(h, v uint64) uint64 {
	h ^= v + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
	h *= 0xff51afd7ed558ccd
	return h ^ (h >> 33)
}

func hashValue(v any, nodes *int, h uint64) uint64 {
	*nodes++
	switch x := v.(type) {
	case nil:
		return mix(h, 1)
	case bool:
		if x {
			return mix(h, 2)
		}
		return mix(h, 3)
	case int:
		return mix(mix(h, 4), uint64(x))
	case float64:
		return mix(mix(h, 5), math.Float64bits(x))
	case *big.Int:
		return mix(mix(h, 6), maphash.String(hashSeed, x.String()))
	case string:
		return mix(mix(h, 7), maphash.String(hashSeed, x))
	case []any:
		h = mix(mix(h, 8), uint64(len(x)))
		for _, e := range x {
			h = hashValue(e, nodes, h)
		}
		return h
	case map[string]any:
		var sum uint64
		for k, e := range x {
			sum += hashValue(e, nodes, mix(9, maphash.String(hashSeed, k)))
		}
		return mix(mix(mix(h, 10), uint64(len(x))), sum)
	default:
		// Values outside gojq's type set (int64 from client-go) hash by their printed form; fmt
		// prints maps in key order, so this stays deterministic.
		return mix(mix(h, 11), maphash.String(hashSeed, fmt.Sprintf("%T:%v", x, x)))
	}
}
