package karta

import (
	"errors"
	"math"
	"math/big"
	"strconv"

	"github.com/fleetflow/fleetflow/internal/jsonenc"
)

// appendJSON writes a jq value as JSON. It exists because serializing the template is half the
// cost of decoding one, and the generic encoders pay for reflection and map-key sorting that the
// decoder does not need (jsonenc.Append sorts keys, for hashing, and knows no *big.Int). Strings are
// quoted by jsonenc. Values outside gojq's type set go through fastJSON.
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
		return jsonenc.AppendString(buf, x), nil
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
			buf = jsonenc.AppendString(buf, k)
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
