package conductor

import (
	"encoding/json"
	"fmt"
)

// The messages the conductor writes into last_error and its logs read as
// Ironic's do, so operators' searches and alerts written for Ironic match.

// orNone renders an unset field as Python's None.
func orNone(s *string) string {
	if s == nil {
		return "None"
	}
	return *s
}

// jsonText renders a step or value as JSON text; a value that does not
// marshal still says what it is.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
