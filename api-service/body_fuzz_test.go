package apiservice

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/ferricbm/ferric/pkg/errs"
)

// FuzzBodyDecoder checks the properties the body checks exist for: a body
// that passes them decodes into a document that, stored as JSON, any
// float64 decoder reads back, and within a heap bound (the memory
// oracle: no body that passes grows the heap past a few times its size
// and a fixed cost per value allowed); a body that fails them is a client
// error.
func FuzzBodyDecoder(f *testing.F) {
	for _, s := range []string{`{}`, `{"a": 1e400}`, `{"a": "1e400"}`, `[-1E+999]`, `{"a": [1, 2.5, -0, 1e-400]}`,
		`{"a": "\"}1e400"}`, `{"a": 1e308}`, `[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]`, `{"a": tru}`, `1 2`,
		"[" + strings.Repeat("0,", maxElements-1) + "0]", "[" + strings.Repeat("0,", maxElements) + "0]"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		depth, elements, number := scanJSON(raw)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		v, err := decodeJSON(raw)
		runtime.ReadMemStats(&after)
		if grown := after.TotalAlloc - before.TotalAlloc; elements <= maxElements && grown > decodeHeapBound(len(raw)) {
			t.Fatalf("decoding %d bytes (%d values) allocated %d bytes, more than the bound %d", len(raw), elements, grown, decodeHeapBound(len(raw)))
		}
		if err != nil {
			if errs.Status(err) != 400 {
				t.Fatalf("decode %q: status %d: %v", raw, errs.Status(err), err)
			}
			return
		}
		if depth > maxNesting || elements > maxElements || number != "" {
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

// decodeHeapBound is the most decoding a body of n bytes that passes the
// checks may allocate: its text a few times over, and a fixed cost for
// each of the values allowed.
func decodeHeapBound(n int) uint64 {
	return uint64(8*n) + maxElements*160 + 1<<20
}

// FuzzFieldsDecoder is the memory oracle of the typed routes: splitting a
// body into its members allocates a small multiple of its size whatever
// it nests, where decoding it whole costs a fixed amount per value.
func FuzzFieldsDecoder(f *testing.F) {
	for _, s := range []string{`{}`, `{"callback_url": "http://192.0.2.1:9999", "agent_token": "t"}`, `[]`, `null`, `{"a": 1} {}`,
		`{"a": [` + strings.Repeat("{},", maxElements-1) + `{}]}`, `{"a": ` + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting) + `}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fields, err := decodeFields(raw)
		runtime.ReadMemStats(&after)
		if grown := after.TotalAlloc - before.TotalAlloc; grown > fieldsHeapBound(len(raw)) {
			t.Fatalf("splitting %d bytes allocated %d bytes, more than the bound %d", len(raw), grown, fieldsHeapBound(len(raw)))
		}
		if err != nil {
			if errs.Status(err) != 400 {
				t.Fatalf("split %q: status %d: %v", raw, errs.Status(err), err)
			}
			return
		}
		for k, v := range fields {
			if !json.Valid(v) {
				t.Fatalf("member %q of %q kept as %q, not JSON", k, raw, v)
			}
		}
	})
}

// fieldsHeapBound is the most splitting a body of n bytes into members
// may allocate: its text a few times over and a fixed cost, none per
// nested value.
func fieldsHeapBound(n int) uint64 {
	return uint64(4*n) + 64<<10
}
