package output_test

import (
	"encoding/json"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

func render(write func(*strings.Builder) error) string {
	GinkgoHelper()
	var b strings.Builder
	Expect(write(&b)).To(Succeed())
	return b.String()
}

var _ = Describe("output", func() {
	list := output.List{
		Headings: []string{"UUID", "Boot Index", "Properties", "Updated At"},
		Rows: [][]any{
			{"0d5f3a2b", 0, map[string]any{"auth_password": "******", "target_lun": json.Number("0")}, nil},
			{"1e6a4b3c-long", 10, map[string]any{}, "2026-05-01T12:00:05.010203+00:00"},
		},
	}
	record := output.Record{
		Fields: []string{"boot_index", "extra", "maintenance", "uuid"},
		Values: []any{1, map[string]any{"rack": "r12"}, true, "0d5f3a2b"},
	}

	It("draws a list as a table, null as None and objects as JSON", func() {
		Expect(render(func(b *strings.Builder) error { return output.WriteList(b, output.Options{Format: "table"}, list) })).To(Equal(
			"+---------------+------------+-------------------------------------------+----------------------------------+\n" +
				"| UUID          | Boot Index | Properties                                | Updated At                       |\n" +
				"+---------------+------------+-------------------------------------------+----------------------------------+\n" +
				"| 0d5f3a2b      | 0          | {\"auth_password\":\"******\",\"target_lun\":0} | None                             |\n" +
				"| 1e6a4b3c-long | 10         | {}                                        | 2026-05-01T12:00:05.010203+00:00 |\n" +
				"+---------------+------------+-------------------------------------------+----------------------------------+\n"))
	})

	It("draws a record as a Field/Value table with booleans as True/False", func() {
		Expect(render(func(b *strings.Builder) error { return output.WriteRecord(b, output.Options{Format: "table"}, record) })).To(Equal(
			"+-------------+----------------+\n" +
				"| Field       | Value          |\n" +
				"+-------------+----------------+\n" +
				"| boot_index  | 1              |\n" +
				"| extra       | {\"rack\":\"r12\"} |\n" +
				"| maintenance | True           |\n" +
				"| uuid        | 0d5f3a2b       |\n" +
				"+-------------+----------------+\n"))
	})

	It("keeps multi-line values inside their cell", func() {
		l := output.List{Headings: []string{"A", "B"}, Rows: [][]any{{"x\nyy", "z"}}}
		Expect(render(func(b *strings.Builder) error { return output.WriteList(b, output.Options{Format: "table"}, l) })).To(Equal(
			"+----+---+\n| A  | B |\n+----+---+\n| x  | z |\n| yy |   |\n+----+---+\n"))
	})

	It("prints nothing for an empty table, [] for empty json and yaml", func() {
		empty := output.List{Headings: []string{"UUID"}}
		Expect(render(func(b *strings.Builder) error { return output.WriteList(b, output.Options{Format: "table"}, empty) })).To(BeEmpty())
		Expect(render(func(b *strings.Builder) error { return output.WriteList(b, output.Options{Format: "json"}, empty) })).To(Equal("[]\n"))
		Expect(render(func(b *strings.Builder) error { return output.WriteList(b, output.Options{Format: "yaml"}, empty) })).To(Equal("[]\n"))
	})

	It("writes json keyed by heading, in column order, with native values", func() {
		out := render(func(b *strings.Builder) error { return output.WriteList(b, output.Options{Format: "json"}, list) })
		Expect(out).To(MatchJSON(`[
			{"UUID": "0d5f3a2b", "Boot Index": 0, "Properties": {"auth_password": "******", "target_lun": 0}, "Updated At": null},
			{"UUID": "1e6a4b3c-long", "Boot Index": 10, "Properties": {}, "Updated At": "2026-05-01T12:00:05.010203+00:00"}]`))
		Expect(strings.Index(out, `"UUID"`)).To(BeNumerically("<", strings.Index(out, `"Boot Index"`)))
		Expect(render(func(b *strings.Builder) error { return output.WriteRecord(b, output.Options{Format: "json"}, record) })).To(MatchJSON(
			`{"boot_index": 1, "extra": {"rack": "r12"}, "maintenance": true, "uuid": "0d5f3a2b"}`))
	})

	It("writes yaml in column order", func() {
		Expect(render(func(b *strings.Builder) error { return output.WriteRecord(b, output.Options{Format: "yaml"}, record) })).To(Equal(
			"boot_index: 1\nextra:\n  rack: r12\nmaintenance: true\nuuid: 0d5f3a2b\n"))
		Expect(render(func(b *strings.Builder) error {
			return output.WriteList(b, output.Options{Format: "yaml", Columns: []string{"uuid", "Updated At"}}, list)
		})).To(Equal("- UUID: 0d5f3a2b\n  Updated At: null\n- UUID: 1e6a4b3c-long\n  Updated At: \"2026-05-01T12:00:05.010203+00:00\"\n"))
	})

	It("writes bare values: a row per line for lists, a value per line for records", func() {
		Expect(render(func(b *strings.Builder) error {
			return output.WriteList(b, output.Options{Format: "value", Columns: []string{"Boot Index", "UUID"}}, list)
		})).To(Equal("0 0d5f3a2b\n10 1e6a4b3c-long\n"))
		Expect(render(func(b *strings.Builder) error {
			return output.WriteRecord(b, output.Options{Format: "value", Columns: []string{"uuid"}}, record)
		})).To(Equal("0d5f3a2b\n"))
	})

	It("selects columns by heading or field name, and rejects unknown ones", func() {
		Expect(render(func(b *strings.Builder) error {
			return output.WriteList(b, output.Options{Format: "value", Columns: []string{"boot_index"}}, list)
		})).To(Equal("0\n10\n"))
		var b strings.Builder
		err := output.WriteList(&b, output.Options{Format: "table", Columns: []string{"UUID", "Nope"}}, list)
		Expect(err).To(MatchError(ContainSubstring("unknown column(s) Nope")))
		Expect(b.String()).To(BeEmpty())
	})

	It("accepts only the known formats", func() {
		for _, f := range output.Formats {
			Expect(output.Options{Format: f}.Validate()).To(Succeed())
		}
		Expect(output.Options{Format: "csv"}.Validate()).To(MatchError(ContainSubstring(`unknown output format "csv"`)))
	})
})
