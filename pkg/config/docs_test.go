package config_test

import (
	"os"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
)

const (
	docsPage   = "../../docs/configuration.md"
	tableBegin = "<!-- options: generated from pkg/config by `cd pkg && go test ./config -update`; do not edit -->\n"
	tableEnd   = "<!-- end of options -->\n"
)

var _ = Describe("docs/configuration.md", func() {
	BeforeEach(clearEnv)

	It("holds the option table the declarations generate", func() {
		data, err := os.ReadFile(docsPage)
		Expect(err).NotTo(HaveOccurred())
		page := string(data)
		before, rest, found := strings.Cut(page, tableBegin)
		Expect(found).To(BeTrue(), "%s lacks the line %q", docsPage, tableBegin)
		_, after, found := strings.Cut(rest, tableEnd)
		Expect(found).To(BeTrue(), "%s lacks the line %q", docsPage, tableEnd)
		want := before + tableBegin + config.OptionTable() + tableEnd + after
		if *update {
			Expect(os.WriteFile(docsPage, []byte(want), 0o644)).To(Succeed())
			page = want
		}
		Expect(page).To(Equal(want), "run: cd pkg && go test ./config -update")
	})

	It("gives each option one row with its default and what it allows", func() {
		table := config.OptionTable()
		for _, want := range []string{
			"### [api]\n",
			"| `port` | integer; 1..65535 | `6385` | Port the API listens on. |\n",
			"| `log_format` | string; one of text, json | `text` |",
			"| `host` | string; required | `<hostname>` |",
			"| `auth_type` | string; one of none, password (or empty) |  |",
			"| `username` | string; required when [DEFAULT] auth_strategy is keystone |  |",
			"| `auth_url` | string; required when auth_type is tempauth or password; http(s) URL |  |",
		} {
			Expect(table).To(ContainSubstring(want))
		}
		Expect(strings.Count(table, "\n| `")).To(Equal(optionCount()))
	})
})
