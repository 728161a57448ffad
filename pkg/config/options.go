package config

import (
	"fmt"
	"reflect"
	"strings"
)

// option is one `ini`-tagged field, located by its index path in Config,
// with what its tags declare about it.
type option struct {
	section, name, help, sample string
	// def is the `default` tag, in the syntax the loader reads; hasDef
	// tells an empty default from none (the zero value).
	def    string
	hasDef bool
	rule   rule
	index  []int
}

func (o option) field(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(o.index)
}

// sections lists the INI sections in declaration order: sections[i] is the
// section of Config's field i.
var sections, options = describe()

func describe() ([]string, []option) {
	var secs []string
	var opts []option
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		st := t.Field(i).Type
		for j := range st.NumField() {
			f := st.Field(j)
			if _, ok := f.Tag.Lookup("ini"); !ok {
				continue
			}
			o, err := declared(f, []int{i, j})
			if err != nil {
				panic(fmt.Sprintf("config: field %s.%s: %v", t.Field(i).Name, f.Name, err))
			}
			if len(secs) == i {
				secs = append(secs, o.section)
			} else if secs[i] != o.section {
				panic(fmt.Sprintf("config: field %s.%s: section %q in a struct of section %q", t.Field(i).Name, f.Name, o.section, secs[i]))
			}
			opts = append(opts, o)
		}
		if len(secs) != i+1 {
			panic(fmt.Sprintf("config: section struct %s declares no option", t.Field(i).Name))
		}
	}
	if err := resolveRequirements(opts); err != nil {
		panic("config: " + err.Error())
	}
	return secs, opts
}

// declared reads the tags of one option field, refusing any it cannot
// honour so that a bad declaration fails every test run, not a user.
func declared(f reflect.StructField, index []int) (option, error) {
	tag := f.Tag.Get("ini")
	sec, name, ok := strings.Cut(tag, ".")
	if !ok {
		return option{}, fmt.Errorf("ini tag %q is not section.option", tag)
	}
	o := option{section: sec, name: name, help: f.Tag.Get("help"), sample: f.Tag.Get("sample"), index: index}
	o.def, o.hasDef = f.Tag.Lookup("default")
	if o.hasDef {
		if err := set(reflect.New(f.Type).Elem(), o.def); err != nil {
			return option{}, fmt.Errorf("default: %w", err)
		}
	}
	r, err := parseRule(f.Tag, f.Type)
	if err != nil {
		return option{}, err
	}
	o.rule = r
	return o, nil
}

// lookup finds an option; section names match case-insensitively and, as
// in oslo.config, dashes in option names equal underscores.
func lookup(section, name string) (option, bool) {
	name = strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, o := range options {
		if strings.EqualFold(o.section, section) && o.name == name {
			return o, true
		}
	}
	return option{}, false
}

func knownSection(section string) (string, bool) {
	for _, s := range sections {
		if strings.EqualFold(s, section) {
			return s, true
		}
	}
	return "", false
}
