// Package driverinfo reads values out of a node's driver_info the way
// Ironic's drivers do, with their error messages, for every driver that
// parses one.
package driverinfo

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// String reads info[key]; absent is "". A number or Boolean typed without
// quotes still means its text (a numeric password, say).
func String(info model.JSONObject, key string) (string, error) {
	switch v := info[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case float64, int, int64, bool:
		return fmt.Sprint(v), nil
	}
	return "", errs.InvalidParameterValue("%s must be a string.", key)
}

// Port checks a port number with Ironic's validate_network_port wording.
func Port(v any, name string) (int, error) {
	n, ok := Int(v)
	if !ok {
		return 0, errs.InvalidParameterValue("%s \"%v\" is not a valid integer.", name, v)
	}
	if n < 1 || n > 65535 {
		return 0, errs.InvalidParameterValue(
			"%s \"%v\" is out of range. Valid port numbers must be between 1 and 65535.", name, v)
	}
	return n, nil
}

// Int reads an integer given as a JSON number or a decimal string.
func Int(v any) (int, bool) {
	switch t := v.(type) {
	case float64:
		if t != math.Trunc(t) || math.Abs(t) > 1<<31 {
			return 0, false
		}
		return int(t), true
	case int:
		return t, true
	case int64:
		return int(t), true
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(t))
		return n, err == nil
	}
	return 0, false
}

// PyList formats names as Ironic's messages do: ['a', 'b'].
func PyList(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + n + "'"
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// Required reads keys as String does and lists those absent or blank, in
// the order given, for the driver's own "missing" message. Values keep
// their spaces: a password may hold them.
func Required(info model.JSONObject, keys ...string) (map[string]string, []string, error) {
	vals := make(map[string]string, len(keys))
	var missing []string
	for _, k := range keys {
		s, err := String(info, k)
		if err != nil {
			return nil, nil, err
		}
		if strings.TrimSpace(s) == "" {
			missing = append(missing, k)
		}
		vals[k] = s
	}
	return vals, missing, nil
}
