package present

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/ferricbm/ferric/pkg/secrets"
)

// AppendString appends s as a JSON string exactly as encoding/json writes
// it (HTML-escaped). Plain printable ASCII, nearly every value here, is
// copied as is; anything else goes through encoding/json.
func AppendString(buf []byte, s string) []byte {
	if !plain(s) {
		b, _ := json.Marshal(s)
		return append(buf, b...)
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// plainByte marks the bytes encoding/json copies into a string as is.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// plain reports whether encoding/json writes s unchanged between quotes.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

// AppendLinks appends the JSON of Links(base, path).
func AppendLinks(buf []byte, base, path string) []byte {
	if !plain(base) || !plain(path) {
		b, _ := json.Marshal(Links(base, path))
		return append(buf, b...)
	}
	buf = append(buf, `[{"href":"`...)
	buf = append(buf, base...)
	buf = append(buf, "/v1/"...)
	buf = append(buf, path...)
	buf = append(buf, `","rel":"self"},{"href":"`...)
	buf = append(buf, base...)
	buf = append(buf, '/')
	buf = append(buf, path...)
	return append(buf, `","rel":"bookmark"}]`...)
}

// AppendValue appends v as encoding/json writes it. The shapes decoded
// JSON has (objects, arrays, strings, float64 numbers, booleans, null) are
// written directly, object keys sorted as encoding/json sorts them;
// anything else goes through encoding/json.
func AppendValue(buf []byte, v any) ([]byte, error) { return appendValue(buf, v, false) }

// AppendMasked appends secrets.MaskValue(v) as encoding/json writes it,
// masking while writing rather than building a masked copy first.
func AppendMasked(buf []byte, v any) ([]byte, error) { return appendValue(buf, v, true) }

func appendValue(buf []byte, v any, mask bool) ([]byte, error) {
	var err error
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, t), nil
	case string:
		if mask {
			t = secrets.MaskString(t)
		}
		return AppendString(buf, t), nil
	case float64:
		if !math.IsInf(t, 0) && !math.IsNaN(t) {
			return appendFloat(buf, t), nil
		}
	case map[string]any:
		if t == nil {
			return append(buf, "null"...), nil
		}
		keys := make([]string, 0, len(t))
		for k := range t {
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
			if mask && secrets.IsSensitiveKey(k) {
				buf = AppendString(buf, secrets.Masked)
				continue
			}
			if buf, err = appendValue(buf, t[k], mask); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case []any:
		if t == nil && !mask {
			// Masking copies a nil list into an empty one.
			return append(buf, "null"...), nil
		}
		buf = append(buf, '[')
		for i, e := range t {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, err = appendValue(buf, e, mask); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	}
	if mask {
		v = secrets.MaskValue(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}

// appendFloat writes a finite number in encoding/json's (ECMAScript's)
// format: the shortest representation, in exponent form only below 1e-6
// or from 1e21, the exponent without a leading zero.
func appendFloat(buf []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if n := len(buf); format == 'e' && n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
		buf[n-2] = buf[n-1]
		buf = buf[:n-1]
	}
	return buf
}
