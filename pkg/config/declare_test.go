package config

import (
	"reflect"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// misdeclared holds one declaration the loader cannot honour per field.
type misdeclared struct {
	NoSection   string `ini:"port"`
	BadDefault  int    `ini:"s.bad_default" default:"many"`
	StringRange string `ini:"s.string_range" range:">0"`
	OpenRange   int    `ini:"s.open_range" range:"<10"`
	BadBound    int    `ini:"s.bad_bound" range:"1..ten"`
	IntChoices  int    `ini:"s.int_choices" choices:"1,2"`
	NoFormat    string `ini:"s.no_format" format:"email"`
	BoolFormat  bool   `ini:"s.bool_format" format:"url"`
	IntRequired int    `ini:"s.int_required" required:"true"`
}

// The package names gomega and ginkgo stay: a dot import would clash with
// the Default section.
var _ = ginkgo.Describe("option declarations", func() {
	ginkgo.It("refuses each tag it cannot honour, naming it", func() {
		t := reflect.TypeFor[misdeclared]()
		want := []string{
			`ini tag "port" is not section.option`, `default: invalid integer "many"`, "range on a string option",
			`range "<10" is not >0, >=0 or lo..hi`, `range "1..ten": invalid integer "ten"`, "choices on a int option",
			`format "email" on a string option`, `format "url" on a bool option`, "required on a int option",
		}
		gomega.Expect(t.NumField()).To(gomega.Equal(len(want)))
		for i := range t.NumField() {
			_, err := declared(t.Field(i), []int{i})
			gomega.Expect(err).To(gomega.MatchError(want[i]), t.Field(i).Name)
		}
	})

	ginkgo.It("refuses a requirement on an option that does not exist or cannot hold the value", func() {
		opts := []option{
			{section: "s", name: "mode", rule: rule{choices: []string{"a", "b"}}},
			{section: "s", name: "x", rule: rule{required: parseRequirement("mode=c")}},
		}
		gomega.Expect(resolveRequirements(opts)).To(gomega.MatchError(`[s] x: required when mode is "c", which it cannot be`))
		opts[1].rule.required = parseRequirement("other.mode=a")
		gomega.Expect(resolveRequirements(opts)).To(gomega.MatchError(`[s] x: required on unknown option "other.mode"`))
	})
})
