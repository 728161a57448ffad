package catalogue

import (
	"encoding/json"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
)

// The Set functions of the common kinds of attribute, with the schema
// errors Ironic words for them ("Schema error for <resource>: ...").

// TypeError is the schema error for a value of the wrong JSON type.
func TypeError(resource, name string, v any, want string) error {
	b, _ := json.Marshal(v)
	return errs.New(errs.KindInvalid, "Schema error for %s: %s is not of type '%s' (field '%s')", resource, b, want, name)
}

// TypeErrors words TypeError for one resource.
func TypeErrors(resource string) func(name string, v any, want string) error {
	return func(name string, v any, want string) error { return TypeError(resource, name, v, want) }
}

// TextRule says what a string attribute takes.
type TextRule struct {
	// Required: null is refused.
	Required bool
	// MaxLen bounds the length (the column width); 0 is unbounded.
	MaxLen int
	// Check, if set, validates the string and returns it normalised.
	Check func(s string) (string, error)
}

// Text is the Set of a string attribute; set gets nil for null.
func Text[M any](resource, name string, r TextRule, set func(m *M, s *string)) func(*M, any) error {
	return func(m *M, v any) error {
		if v == nil {
			if r.Required {
				return errs.New(errs.KindInvalid, "Schema error for %s: '%s' is a required property", resource, name)
			}
			set(m, nil)
			return nil
		}
		s, ok := v.(string)
		if !ok {
			return TypeError(resource, name, v, "string")
		}
		if r.MaxLen > 0 && len(s) > r.MaxLen {
			return errs.New(errs.KindInvalid, "Schema error for %s: '%s' is too long (maximum %d characters)", resource, name, r.MaxLen)
		}
		if r.Check != nil {
			var err error
			if s, err = r.Check(s); err != nil {
				return err
			}
		}
		set(m, &s)
		return nil
	}
}

// String is the Set of a nullable string attribute stored at ptr.
func String[M any](resource, name string, maxLen int, ptr func(*M) **string) func(*M, any) error {
	return Text(resource, name, TextRule{MaxLen: maxLen}, func(m *M, s *string) { *ptr(m) = s })
}

// MAC normalises a MAC address.
func MAC(s string) (string, error) {
	mac, ok := ident.NormalizeMAC(s)
	if !ok {
		return "", errs.InvalidParameterValue("Expected a MAC address but received %s.", s)
	}
	return mac, nil
}

// UUID makes the check of attribute name holding a UUID, which it writes
// canonically.
func UUID(name string) func(s string) (string, error) {
	return func(s string) (string, error) {
		u, ok := ident.CanonicalUUID(s)
		if !ok {
			return "", errs.InvalidParameterValue("Expected a UUID for %s but received %s.", name, s)
		}
		return u, nil
	}
}

// Object is the Set of a dict attribute stored at ptr; null is {}.
func Object[M any](resource, name string, ptr func(*M) *model.JSONObject) func(*M, any) error {
	return func(m *M, v any) error {
		if v == nil {
			*ptr(m) = model.JSONObject{}
			return nil
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return TypeError(resource, name, v, "object")
		}
		*ptr(m) = model.JSONObject(obj)
		return nil
	}
}

// AsBool accepts a JSON boolean or a boolean string, as Ironic's schemas
// do.
func AsBool(resource, name string, v any) (bool, error) {
	switch t := v.(type) {
	case bool:
		return t, nil
	case string:
		switch strings.ToLower(t) {
		case "true", "1", "t", "on", "y", "yes":
			return true, nil
		case "false", "0", "f", "off", "n", "no":
			return false, nil
		}
	}
	return false, TypeError(resource, name, v, "boolean")
}

// Bool is the Set of a boolean attribute stored at ptr; null is ifNull.
func Bool[M any](resource, name string, ifNull bool, ptr func(*M) *bool) func(*M, any) error {
	return func(m *M, v any) error {
		if v == nil {
			*ptr(m) = ifNull
			return nil
		}
		b, err := AsBool(resource, name, v)
		if err != nil {
			return err
		}
		*ptr(m) = b
		return nil
	}
}

// CopyObject deep-copies a dict attribute for a patch; nil is {}.
func CopyObject(o model.JSONObject) model.JSONObject {
	if o == nil {
		return model.JSONObject{}
	}
	return model.JSONObject(jsonpatch.DeepCopy(map[string]any(o)).(map[string]any))
}
