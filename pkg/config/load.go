package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// EnvPrefix starts every environment override: FERRIC_<SECTION>_<OPTION>.
const EnvPrefix = "FERRIC_"

// Load returns Defaults() overridden by the INI file at path (none when
// path is ""), then by the FERRIC_<SECTION>_<OPTION> variables of environ
// (KEY=VALUE pairs, as os.Environ gives them: only main reads the process
// environment).
// Unknown sections and options are errors so that a typo cannot silently
// leave a default in place; in the environment this applies to variables
// naming a known section (FERRIC_CONDUCTOR_HEARTBEAT_TIMOUT fails), while
// other FERRIC_ variables are left to whoever owns them. A deprecated
// option is copied to the option that replaced it, and setting both to
// different values is an error. Load does not otherwise check values for
// consistency: see Validate.
func Load(path string, environ []string) (Config, error) {
	c := Defaults()
	seen := map[string]bool{}
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("read config file: %w", err)
		}
		if err := applyINI(&c, data, seen); err != nil {
			return Config{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if err := applyEnv(&c, environ, seen); err != nil {
		return Config{}, err
	}
	if err := resolveDeprecated(&c, seen); err != nil {
		return Config{}, err
	}
	return c, nil
}

// resolveDeprecated moves [api] auth_strategy, where Ferric first had it,
// to [DEFAULT] auth_strategy, where Ironic has it; empty, as in the
// example file, is unset. seen holds the "section.option" names the file
// or the environment set.
func resolveDeprecated(c *Config, seen map[string]bool) error {
	if c.API.AuthStrategy == "" {
		return nil
	}
	if seen["DEFAULT.auth_strategy"] && c.Default.AuthStrategy != c.API.AuthStrategy {
		return fmt.Errorf("[DEFAULT] auth_strategy %q and the deprecated [api] auth_strategy %q disagree: set only [DEFAULT] auth_strategy",
			c.Default.AuthStrategy, c.API.AuthStrategy)
	}
	c.Default.AuthStrategy = c.API.AuthStrategy
	return nil
}

func applyINI(c *Config, data []byte, seen map[string]bool) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	section := ""
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			name, ok := strings.CutSuffix(line[1:], "]")
			if !ok {
				return fmt.Errorf("line %d: malformed section header %q", n, line)
			}
			if section, ok = knownSection(strings.TrimSpace(name)); !ok {
				return fmt.Errorf("line %d: unknown section [%s]", n, strings.TrimSpace(name))
			}
			continue
		case raw[0] == ' ' || raw[0] == '\t':
			return fmt.Errorf("line %d: continuation lines are not supported", n)
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return fmt.Errorf("line %d: expected option = value, got %q", n, line)
		}
		name := strings.TrimSpace(line[:i])
		if section == "" {
			return fmt.Errorf("line %d: option %q before any section header", n, name)
		}
		o, ok := lookup(section, name)
		if !ok {
			return fmt.Errorf("line %d: unknown option %q in section [%s]", n, name, section)
		}
		if err := set(o.field(c), unquote(strings.TrimSpace(line[i+1:]))); err != nil {
			return fmt.Errorf("line %d: [%s] %s: %w", n, o.section, o.name, err)
		}
		seen[o.section+"."+o.name] = true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read: %w", err)
	}
	return nil
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

func applyEnv(c *Config, environ []string, seen map[string]bool) error {
	var problems []error
	for _, kv := range environ {
		key, value, _ := strings.Cut(kv, "=")
		rest, ok := strings.CutPrefix(key, EnvPrefix)
		if !ok {
			continue
		}
		var sec string
		for _, s := range sections {
			if after, ok := strings.CutPrefix(rest, strings.ToUpper(s)+"_"); ok {
				sec, rest = s, after
				break
			}
		}
		if sec == "" {
			continue
		}
		o, ok := lookup(sec, rest)
		if !ok {
			problems = append(problems, fmt.Errorf("environment variable %s: unknown option %q in section [%s]", key, strings.ToLower(rest), sec))
			continue
		}
		if err := set(o.field(c), value); err != nil {
			problems = append(problems, fmt.Errorf("environment variable %s: %w", key, err))
			continue
		}
		seen[o.section+"."+o.name] = true
	}
	return errors.Join(problems...)
}

var (
	durationType    = reflect.TypeFor[time.Duration]()
	optionalIntType = reflect.TypeFor[*int]()
)

// set parses text into the field's type, the way oslo.config reads values.
func set(f reflect.Value, text string) error {
	switch {
	case f.Type() == durationType:
		d, err := parseDuration(text)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case f.Kind() == reflect.String:
		f.SetString(text)
	case f.Kind() == reflect.Bool:
		b, err := parseBool(text)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(text), 10, f.Type().Bits())
		if err != nil {
			return fmt.Errorf("invalid integer %q", text)
		}
		f.SetInt(n)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		f.Set(reflect.ValueOf(parseList(text)))
	case f.Type() == optionalIntType:
		// An empty value unsets the option, as oslo.config's None.
		if strings.TrimSpace(text) == "" {
			f.SetZero()
			return nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("invalid integer %q", text)
		}
		f.Set(reflect.ValueOf(&n))
	default:
		panic(fmt.Sprintf("config: unsupported option type %s", f.Type()))
	}
	return nil
}

// parseDuration reads whole seconds, as Ironic's options are given, or a Go
// duration such as "500ms".
func parseDuration(text string) (time.Duration, error) {
	text = strings.TrimSpace(text)
	if n, err := strconv.ParseInt(text, 10, 64); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want seconds or a value like 500ms or 2m", text)
	}
	return d, nil
}

func parseBool(text string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("invalid boolean %q: want true/false, yes/no, on/off or 1/0", text)
}

func parseList(text string) []string {
	out := []string{}
	for _, item := range strings.Split(text, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
