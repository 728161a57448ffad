package present_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/secrets"
)

var _ = Describe("JSON appenders", func() {
	It("write strings as encoding/json does", func() {
		for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "<tag>&amp;", "tab\there", "é\u2028\u2029", "bad \xff utf-8", "\x00\x1f"} {
			want, err := json.Marshal(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(present.AppendString([]byte("x"), s))).To(Equal("x"+string(want)), "%q", s)
		}
	})

	It("write decoded JSON values, masked or not, as encoding/json does", func() {
		for _, doc := range valueSeeds {
			checkValue(GinkgoT(), doc)
		}
		checkEqual(GinkgoT(), map[string]any{"nil list": []any(nil), "typed": model.JSONObject{"token": "t"}, "n": json.Number("1.50")})
	})

	It("write links as encoding/json does", func() {
		want, err := json.Marshal(present.Links("http://h:1", "nodes/a&b"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(present.AppendLinks(nil, "http://h:1", "nodes/a&b"))).To(Equal(string(want)))
	})
})

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"plain", "<&>", "\u2028", "\xff", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := present.AppendString(nil, s); string(got) != string(want) {
			t.Fatalf("AppendString(%q) = %s, want %s", s, got, want)
		}
	})
}

var valueSeeds = []string{
	`null`, `true`, `"plain"`, `0`, `-0`, `0.1`, `1e21`, `1e20`, `123456789012345678901234`, `1e-6`, `1e-7`, `-2.5e-9`, `5e-324`,
	`1.7976931348623157e308`, `{"b": 1, "a": [1, "x", null, {"B": false}], "": {}}`,
	`{"auth_password": "pw", "target_iqn": "iqn.2026-01.org.example:vol-1", "nested": [{"token": "t", "url": "mysql://u:p@h/db"}]}`,
	`{"Secret": {"deep": 1}, "note": "password=x <b>&", "list": [], "é": "\u2028"}`,
}

// checkValue decodes doc as Ferric's JSON columns do and compares both
// appenders with encoding/json.
func checkValue(t fataler, doc string) {
	var v any
	if json.Unmarshal([]byte(doc), &v) != nil {
		return
	}
	checkEqual(t, v)
}

// fataler is what checkEqual needs from GinkgoT() and a fuzz target's T.
type fataler interface {
	Fatalf(format string, args ...any)
}

func checkEqual(t fataler, v any) {
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	got, err := present.AppendValue([]byte("x"), v)
	if err != nil || string(got) != "x"+string(want) {
		t.Fatalf("AppendValue(%#v) = %s, %v; want x%s", v, got, err, want)
	}
	want, err = json.Marshal(secrets.MaskValue(v))
	if err != nil {
		t.Fatalf("marshal masked %#v: %v", v, err)
	}
	got, err = present.AppendMasked(nil, v)
	if err != nil || string(got) != string(want) {
		t.Fatalf("AppendMasked(%#v) = %s, %v; want %s", v, got, err, want)
	}
}

func FuzzAppendValue(f *testing.F) {
	for _, s := range valueSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) { checkValue(t, doc) })
}
