package jsonenc

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Append appends the JSON encoding of an unstructured value to buf: what decoding JSON into any yields
// (maps, slices, strings, float64, bool, nil), the integer types unstructured objects also hold, and
// json.Number. The bytes are exactly encoding/json's (keys sorted, HTML-safe escaping), so equal objects
// encode equally, but without reflection: the placer encodes every workload it decides on, and
// encoding/json's map encoder was a tenth of its time. Any other type is handed to encoding/json.
func Append(buf []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case string:
		return AppendString(buf, v), nil
	case bool:
		return strconv.AppendBool(buf, v), nil
	case float64:
		return appendFloat(buf, v, 64)
	case float32:
		return appendFloat(buf, float64(v), 32)
	case int64:
		return strconv.AppendInt(buf, v, 10), nil
	case int:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(buf, int64(v), 10), nil
	case json.Number:
		if v == "" {
			return append(buf, '0'), nil
		}
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return buf, fmt.Errorf("invalid number literal %q", v)
		}
		return append(buf, v...), nil
	case map[string]any:
		if v == nil {
			return append(buf, "null"...), nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = AppendString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = Append(buf, v[k]); err != nil {
				return buf, fmt.Errorf("%s: %w", k, err)
			}
		}
		return append(buf, '}'), nil
	case []any:
		if v == nil {
			return append(buf, "null"...), nil
		}
		buf = append(buf, '[')
		for i, item := range v {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = Append(buf, item); err != nil {
				return buf, fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return append(buf, ']'), nil
	default:
		data, err := json.Marshal(v)
		if err != nil {
			return buf, err
		}
		return append(buf, data...), nil
	}
}

// appendFloat formats like encoding/json: plain notation, exponent notation only for very small or
// large magnitudes, and no NaN or infinity, which JSON cannot carry.
func appendFloat(buf []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return buf, fmt.Errorf("unsupported value %v", f)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	buf = strconv.AppendFloat(buf, f, format, -1, bits)
	if format == 'e' {
		// A two-digit negative exponent loses its leading zero: 1e-07 is written 1e-7.
		if n := len(buf); n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf, nil
}

const hexDigits = "0123456789abcdef"

// AppendString appends s quoted as encoding/json does with HTML escaping on: control characters, <, > and &,
// U+2028 and U+2029 are escaped, and invalid UTF-8 becomes U+FFFD.
func AppendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			buf = append(buf, s[start:i]...)
			switch b {
			case '\\', '"':
				buf = append(buf, '\\', b)
			case '\b':
				buf = append(buf, '\\', 'b')
			case '\f':
				buf = append(buf, '\\', 'f')
			case '\n':
				buf = append(buf, '\\', 'n')
			case '\r':
				buf = append(buf, '\\', 'r')
			case '\t':
				buf = append(buf, '\\', 't')
			default:
				buf = append(buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, s[start:i]...)
			buf = append(buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
