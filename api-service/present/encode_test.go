package present_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/api-service/present"
)

var _ = Describe("JSON appenders", func() {
	It("write strings as encoding/json does", func() {
		for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "<tag>&amp;", "tab\there", "é\u2028\u2029", "bad \xff utf-8", "\x00\x1f"} {
			want, err := json.Marshal(s)
			Expect(err).NotTo(HaveOccurred())
			Expect(string(present.AppendString([]byte("x"), s))).To(Equal("x"+string(want)), "%q", s)
		}
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
