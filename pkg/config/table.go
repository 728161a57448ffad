package config

import (
	"fmt"
	"strings"
)

// OptionTable renders every option as the Markdown tables of
// docs/configuration.md, one per section; a test keeps the page equal to
// it, as it keeps ferric.conf.example equal to Example.
func OptionTable() string {
	var b strings.Builder
	renderOptions(&b, "\n### [%s]\n\n| option | accepts | default | description |\n|---|---|---|---|\n", func(o option, def string) {
		if def != "" {
			def = "`" + cell(def) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", o.name, prose(o.kind()), def, prose(o.help))
	})
	return b.String()
}

// cell keeps text inside one table cell.
func cell(text string) string {
	return strings.ReplaceAll(text, "|", `\|`)
}

// prose is cell for text outside code spans, where Markdown would take
// <name> for HTML.
func prose(text string) string {
	return strings.ReplaceAll(cell(text), "<", "&lt;")
}
