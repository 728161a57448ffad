package config

import (
	"fmt"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// An option's `check` tag is the rule its value alone must meet:
//
//	positive       an integer or duration above zero
//	nonnegative    an integer or duration, possibly empty, not below zero
//	range=A..B     an integer from A to B
//	oneof=a|b      one of the words; an empty word allows an empty value
//	url            empty, or an http(s) URL with a host
//	file           empty, or a file that exists
//	nonempty       a value other than blanks
//
// Rules between options are each section's validate method.

// problems collects what Validate finds, each naming its option.
type problems []error

func (p *problems) bad(section, option, format string, args ...any) {
	*p = append(*p, fmt.Errorf("[%s] %s: %s", section, option, fmt.Sprintf(format, args...)))
}

// checkTags applies every option's check tag.
func checkTags(c *Config, p *problems) {
	for _, o := range options {
		if o.check == "" {
			continue
		}
		if msg := checkValue(o.check, o.field(c)); msg != "" {
			p.bad(o.section, o.name, "%s", msg)
		}
	}
}

// checkValue says what is wrong with v under rule, "" when nothing is.
func checkValue(rule string, v reflect.Value) string {
	name, arg, _ := strings.Cut(rule, "=")
	switch name {
	case "positive", "nonnegative":
		n, set := number(v)
		switch {
		case !set:
		case name == "positive" && n <= 0:
			return "must be positive"
		case name == "nonnegative" && n < 0:
			return "must not be negative"
		}
	case "range":
		lo, hi, _ := strings.Cut(arg, "..")
		n, _ := number(v)
		if n < int64(atoi(lo)) || n > int64(atoi(hi)) {
			return fmt.Sprintf("%d is outside %s", n, arg)
		}
	case "oneof":
		return checkOneOf(arg, v.String())
	case "url":
		return checkURL(v.String())
	case "file":
		if s := v.String(); s != "" {
			if _, err := os.Stat(s); err != nil {
				return err.Error()
			}
		}
	case "nonempty":
		if strings.TrimSpace(v.String()) == "" {
			return "must not be empty"
		}
	default:
		panic(fmt.Sprintf("config: unknown check %q", rule))
	}
	return ""
}

// number reads an integer, duration or optional integer; set is false
// for an empty optional one.
func number(v reflect.Value) (n int64, set bool) {
	switch {
	case v.Type() == optionalIntType:
		if v.IsNil() {
			return 0, false
		}
		return v.Elem().Int(), true
	case v.Type() == durationType:
		return int64(time.Duration(v.Int())), true
	}
	return v.Int(), true
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("config: bad bound %q in a range check", s))
	}
	return n
}

func checkOneOf(words, s string) string {
	allowed := strings.Split(words, "|")
	for _, w := range allowed {
		if s == w {
			return ""
		}
	}
	named := strings.Join(strings.Fields(strings.Join(allowed, " ")), ", ")
	if strings.HasPrefix(words, "|") {
		named += " (or empty)"
	}
	return fmt.Sprintf("%q is not one of %s", s, named)
}

// checkURL accepts an empty value or an http(s) URL with a host.
func checkURL(s string) string {
	if s == "" {
		return ""
	}
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http(s) URL", s)
	}
	return ""
}
