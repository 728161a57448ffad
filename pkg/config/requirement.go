package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// requirement is a `required` tag: "true", or "[section.]option=v1,v2"
// for an option needed only while another option holds one of those values
// (credentials needed only by the auth_type that uses them).
type requirement struct {
	always bool
	on     string
	values []string
	// index and label locate and name the option depended on, once
	// resolveRequirements has found it.
	index []int
	label string
}

func parseRequirement(text string) *requirement {
	if text == "true" {
		return &requirement{always: true}
	}
	on, values, _ := strings.Cut(text, "=")
	return &requirement{on: on, values: strings.Split(values, ",")}
}

// resolveRequirements finds the option each conditional requirement
// depends on (in the same section unless it names one) and checks that the
// values it waits for are ones that option accepts.
func resolveRequirements(opts []option) error {
	for _, o := range opts {
		q := o.rule.required
		if q == nil || q.always {
			continue
		}
		section, name, other := strings.Cut(q.on, ".")
		if !other {
			section, name = o.section, q.on
		}
		j := slices.IndexFunc(opts, func(d option) bool { return d.section == section && d.name == name })
		if j < 0 {
			return fmt.Errorf("[%s] %s: required on unknown option %q", o.section, o.name, q.on)
		}
		for _, v := range q.values {
			if choices := opts[j].rule.choices; choices != nil && !slices.Contains(choices, v) {
				return fmt.Errorf("[%s] %s: required when %s is %q, which it cannot be", o.section, o.name, q.on, v)
			}
		}
		q.index, q.label = opts[j].index, name
		if other {
			q.label = fmt.Sprintf("[%s] %s", section, name)
		}
	}
	return nil
}

func (q *requirement) problem(c *Config, f reflect.Value) string {
	if q == nil || !isEmpty(f) {
		return ""
	}
	if q.always {
		return "must not be empty"
	}
	on := format(reflect.ValueOf(c).Elem().FieldByIndex(q.index))
	if !slices.Contains(q.values, on) {
		return ""
	}
	return fmt.Sprintf("required when %s is %s", q.label, on)
}

func isEmpty(f reflect.Value) bool {
	if f.Kind() == reflect.Slice {
		return f.Len() == 0
	}
	return strings.TrimSpace(f.String()) == ""
}

func (q *requirement) String() string {
	if q.always {
		return "required"
	}
	last := len(q.values) - 1
	values := strings.Join(q.values[:last], ", ")
	if last > 0 {
		values += " or "
	}
	return fmt.Sprintf("required when %s is %s", q.label, values+q.values[last])
}
