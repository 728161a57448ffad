package apiservice

import (
	"encoding/json"
	"testing"

	"github.com/ferricbm/ferric/pkg/errs"
)

// FuzzBodyDecoder checks the property the body checks exist for: a body
// that passes them decodes into a document that, stored as JSON, any
// float64 decoder reads back; a body that fails them is a client error.
func FuzzBodyDecoder(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": 1e400}`, `{"a": "1e400"}`, `[-1E+999]`, `{"a": [1, 2.5, -0, 1e-400]}`,
		`{"a": "\"}1e400"}`, `{"a": 1e308}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]`, `{"a": tru}`, `1 2`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		depth, number := scanJSON(raw)
		v, err := decodeJSON(raw)
		if err != nil {
			if errs.Status(err) != 400 {
				t.Fatalf("decode %q: status %d: %v", raw, errs.Status(err), err)
			}
			return
		}
		if depth > maxNesting || number != "" {
			return
		}
		stored, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("encode the decoded %q: %v", raw, err)
		}
		var back any
		if err := json.Unmarshal(stored, &back); err != nil {
			t.Fatalf("accepted %q stores %s, which does not read back: %v", raw, stored, err)
		}
	})
}
