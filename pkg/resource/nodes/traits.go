package nodes

import (
	"regexp"

	"github.com/ferricbm/ferric/pkg/errs"
)

// Trait names (1.37): a standard os-traits name (an upper-case namespace
// and at least one more underscore-separated segment, e.g. HW_CPU_X86_AVX2)
// or a custom one, CUSTOM_ followed by upper-case letters, digits and '_'.
var (
	standardTrait = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)
	customTrait   = regexp.MustCompile(`^CUSTOM_[A-Z0-9_]+$`)
)

const maxTraitLength = 255

// CheckTrait validates one trait name.
func CheckTrait(trait string) error {
	if len(trait) <= maxTraitLength && (customTrait.MatchString(trait) || standardTrait.MatchString(trait)) {
		return nil
	}
	return errs.InvalidParameterValue("Invalid trait %q. A valid trait must be no longer than %d characters. "+
		"Standard traits are defined in the os_traits library. A custom trait must start with the prefix CUSTOM_ "+
		"and use the following characters: A-Z, 0-9 and _", trait, maxTraitLength)
}

// DecodeTraits reads the {"traits": [...]} body of PUT .../traits.
func DecodeTraits(body map[string]any) ([]string, error) {
	if err := errs.OnlyKeys(body, "traits"); err != nil {
		return nil, err
	}
	raw, ok := body["traits"]
	if !ok || raw == nil {
		return nil, errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: traits")
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, errs.InvalidParameterValue("Invalid traits %s: expected a list of strings", jsonText(raw))
	}
	out := make([]string, 0, len(list))
	for _, it := range list {
		s, ok := it.(string)
		if !ok {
			return nil, errs.InvalidParameterValue("Invalid traits %s: expected a list of strings", jsonText(raw))
		}
		if err := CheckTrait(s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
