package conductor

import "github.com/ferricbm/ferric/pkg/model"

// A node's optional columns are pointers (NULL is a value the API shows)
// and its info columns maps that a fresh row leaves nil.

func ptr[T any](v T) *T { return &v }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// ensureInfo makes the info maps writable.
func ensureInfo(n *model.Node) {
	if n.DriverInternalInfo == nil {
		n.DriverInternalInfo = model.JSONObject{}
	}
	if n.InstanceInfo == nil {
		n.InstanceInfo = model.JSONObject{}
	}
}
