package present

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendString appends s as a JSON string exactly as encoding/json writes
// it (HTML-escaped). Plain printable ASCII, nearly every value here, is
// copied as is; anything else goes through encoding/json.
func AppendString(buf []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, s...)
	return append(buf, '"')
}

// AppendLinks appends the JSON of Links(base, path).
func AppendLinks(buf []byte, base, path string) []byte {
	buf = append(buf, `[{"href":`...)
	buf = AppendString(buf, base+"/v1/"+path)
	buf = append(buf, `,"rel":"self"},{"href":`...)
	buf = AppendString(buf, base+"/"+path)
	return append(buf, `,"rel":"bookmark"}]`...)
}
