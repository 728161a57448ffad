package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Example renders the annotated example configuration: every option,
// commented out, with its help and default. ferric.conf.example is this
// text (a test keeps them equal), so the file cannot drift from the code.
func Example() string {
	var b strings.Builder
	b.WriteString("# Ferric configuration file (example).\n" +
		"#\n" +
		"# Every option is listed commented out with its default value. Durations\n" +
		"# are whole seconds or Go durations such as 500ms; booleans are true/false,\n" +
		"# yes/no, on/off or 1/0; lists are comma separated. Each option can also be\n" +
		"# set by the environment variable FERRIC_<SECTION>_<OPTION>, which wins over\n" +
		"# this file, e.g. FERRIC_DATABASE_CONNECTION or\n" +
		"# FERRIC_CONDUCTOR_HEARTBEAT_TIMEOUT.\n")
	renderOptions(&b, "\n[%s]\n", func(o option, def string) {
		b.WriteString("\n")
		for _, line := range wrap(fmt.Sprintf("%s (%s)", o.help, o.kind()), 76) {
			b.WriteString("# " + line + "\n")
		}
		fmt.Fprintf(&b, "#%s = %s\n", o.name, def)
	})
	return b.String()
}

// renderOptions writes header, formatted with the section's name, before
// each section's options and calls row for every option with its default
// as the loader reads it.
func renderOptions(b *strings.Builder, header string, row func(o option, def string)) {
	defaults := Defaults()
	section := ""
	for _, o := range options {
		if o.section != section {
			section = o.section
			fmt.Fprintf(b, header, section)
		}
		row(o, o.defaultIn(defaults))
	}
}

// kind is the option's type and what its rule allows of it.
func (o option) kind() string {
	kind := typeName(reflect.TypeFor[Config]().FieldByIndex(o.index).Type)
	if c := o.rule.constraint(); c != "" {
		kind += "; " + c
	}
	return kind
}

// defaultIn is the option's default as the loader reads it, taken from
// defaults (which Defaults returned), or its sample.
func (o option) defaultIn(defaults Config) string {
	if o.sample != "" {
		return o.sample
	}
	return format(o.field(&defaults))
}

func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Slice:
		return "list"
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		return "integer"
	case t == optionalIntType:
		return "integer, may be empty"
	case t.Kind() == reflect.Bool:
		return "boolean"
	}
	return "string"
}

// format writes a value the way the loader reads it back.
func format(f reflect.Value) string {
	switch {
	case f.Type() == durationType:
		d := time.Duration(f.Int())
		if d%time.Second == 0 {
			return strconv.FormatInt(int64(d/time.Second), 10)
		}
		return d.String()
	case f.Kind() == reflect.Slice:
		return strings.Join(f.Interface().([]string), ",")
	case f.Type() == optionalIntType:
		if f.IsNil() {
			return ""
		}
		return strconv.Itoa(int(f.Elem().Int()))
	}
	return fmt.Sprint(f.Interface())
}

func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return append(lines, line)
}
