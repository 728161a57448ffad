package present

import (
	"encoding/json"
	"unicode/utf8"
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
