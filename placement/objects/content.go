package objects

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/fleetflow/fleetflow/internal/jsonenc"
)

// ContentOf hashes what an applier would copy of an object: no status, no server-set metadata and no
// fleetflow bookkeeping annotations.
func ContentOf(object map[string]any) string { return ContentOfSized(object, 2048) }

// ContentOfSized is ContentOf with the size of the object's full encoding, which bounds the sanitized one.
func ContentOfSized(object map[string]any, size int) string {
	if object == nil {
		return ""
	}
	data, err := jsonenc.Append(make([]byte, 0, size), SanitizedView(object))
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:12])
}

// GenerationOf reads metadata.generation whichever way the object was decoded: JSON from the bus yields a
// float64, a client an int64. Reading only int64 made every workload generation 0, so a placed workload's
// grown spec looked unchanged once its reservations were released.
func GenerationOf(object map[string]any) int64 {
	meta, _ := object["metadata"].(map[string]any)
	g, _ := AsInt64(meta["generation"])
	return g
}

// AsInt64 reads a JSON number whichever way it was decoded: from an event (float64), by a client (int64), or
// as a json.Number.
func AsInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case float64:
		return int64(n), true
	case int:
		return int64(n), true
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}
