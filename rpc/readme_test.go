package rpc

import (
	"context"
	"flag"
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var update = flag.Bool("update", false, "rewrite README.md's method table from the declarations")

const (
	tableBegin = "<!-- methods: generated from methods.go by `go test . -update`; do not edit -->\n"
	tableEnd   = "<!-- end of methods -->\n"
)

var kindLabels = map[Kind]string{
	KindCall:      "call",
	KindAsync:     "call, async",
	KindPerMethod: "call, sync or async per method",
	KindCast:      "**cast**",
}

// methodTable renders the declarations as README.md's method table.
func methodTable() string {
	var b strings.Builder
	b.WriteString("| method | since | kind | `args` | `result` | typical errors |\n|---|---|---|---|---|---|\n")
	for _, m := range Methods() {
		result, errors := m.Doc.Result, m.Doc.Errors
		switch {
		case m.Kind == KindCast:
			result, errors = "—", "—"
		case result == "":
			result = "`null`"
		}
		b.WriteString("| `" + m.Name + "` | " + m.Since + " | " + kindLabels[m.Kind] + " | " + m.Doc.Args +
			" | " + result + " | " + errors + " |\n")
	}
	return b.String()
}

var _ = Describe("README.md", func() {
	It("documents every declared method as methods.go declares it", func() {
		data, err := os.ReadFile("README.md")
		Expect(err).NotTo(HaveOccurred())
		readme := string(data)
		before, rest, found := strings.Cut(readme, tableBegin)
		Expect(found).To(BeTrue(), "README.md lacks the line %q", tableBegin)
		_, after, found := strings.Cut(rest, tableEnd)
		Expect(found).To(BeTrue(), "README.md lacks the line %q", tableEnd)
		want := before + tableBegin + methodTable() + tableEnd + after
		if *update {
			Expect(os.WriteFile("README.md", []byte(want), 0o644)).To(Succeed())
			readme = want
		}
		Expect(readme).To(Equal(want), "run: go test . -update")
	})

	It("declares each method once, with a version this build speaks", func() {
		seen := map[string]bool{}
		for _, m := range Methods() {
			Expect(seen[m.Name]).To(BeFalse(), "%s declared twice", m.Name)
			seen[m.Name] = true
			Expect(checkVersion(envelopeVersion, m.Since)).To(Succeed(), m.Name)
			Expect(kindLabels).To(HaveKey(m.Kind), m.Name)
		}
	})

	It("is served only whole: Serve refuses a mux that misses a declared method", func() {
		mux := NewMux()
		GetBootDevice.Handle(mux, func(context.Context, NodeArgs) (BootDevice, error) { return BootDevice{}, nil })
		_, err := Serve(context.Background(), NewInProcess(), uniqueHost(), mux, testLogger())
		Expect(err).To(MatchError(ContainSubstring("no handler for update_node, destroy_node")))
		Expect(err.Error()).NotTo(ContainSubstring("get_boot_device"))
	})
})
