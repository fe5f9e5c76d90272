package karta

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// appendJSON writes a jq value as JSON. It exists because serializing the template is half the
// cost of decoding one, and the generic encoders pay for reflection and map-key sorting that the
// decoder does not need. Values outside gojq's type set go through fastJSON.
func appendJSON(buf []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, x), nil
	case int:
		return strconv.AppendInt(buf, int64(x), 10), nil
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, errors.New("number is not representable in JSON")
		}
		if x == math.Trunc(x) && math.Abs(x) < 1e15 {
			return strconv.AppendInt(buf, int64(x), 10), nil
		}
		return strconv.AppendFloat(buf, x, 'g', -1, 64), nil
	case *big.Int:
		return x.Append(buf, 10), nil
	case string:
		return appendJSONString(buf, x), nil
	case []any:
		buf = append(buf, '[')
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendJSON(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case map[string]any:
		buf = append(buf, '{')
		first := true
		for k, e := range x {
			if !first {
				buf = append(buf, ',')
			}
			first = false
			buf = appendJSONString(buf, k)
			buf = append(buf, ':')
			var err error
			if buf, err = appendJSON(buf, e); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	default:
		data, err := fastJSON.Marshal(x)
		if err != nil {
			return nil, err
		}
		return append(buf, data...), nil
	}
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as a JSON string; invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c < 0x20:
				switch c {
				case '\n':
					buf = append(buf, '\\', 'n')
				case '\r':
					buf = append(buf, '\\', 'r')
				case '\t':
					buf = append(buf, '\\', 't')
				default:
					buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
				}
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, "\ufffd"...)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}
