package driver

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
)

// RAIDLevels are the RAID levels a logical disk may ask for.
var RAIDLevels = []string{"0", "1", "2", "5", "6", "1+0", "5+0", "6+0", "JBOD"}

// logicalDiskProperties are the keys of a logical disk in a target RAID
// configuration, with what each means.
var logicalDiskProperties = map[string]string{
	"raid_level":               "RAID level of the logical disk: one of " + strings.Join(RAIDLevels, ", ") + ". Required.",
	"size_gb":                  "Size of the logical disk in GiB, or \"MAX\" for all the space left. Required.",
	"volume_name":              "Name to give the volume; generated when not given. Optional.",
	"is_root_volume":           "Whether the operating system is installed on this logical disk (false by default; at most one root volume). Optional.",
	"share_physical_disks":     "Whether other logical disks may use the same physical disks (false by default). Optional.",
	"disk_type":                "Kind of physical disks to build it from: hdd or ssd; any kind when not given. Optional.",
	"interface_type":           "Bus of the physical disks to build it from: sata, scsi or sas; any bus when not given. Optional.",
	"number_of_physical_disks": "How many physical disks to use; the least the RAID level needs when not given. Optional.",
	"controller":               "RAID controller to build it on; chosen by the driver when not given. Optional.",
	"physical_disks":           "List of the physical disks to use; chosen by the driver when not given. Optional.",
}

// LogicalDiskProperties describes the keys of a logical disk of a target
// RAID configuration (GET /v1/drivers/{name}/raid/logical_disk_properties).
func LogicalDiskProperties() map[string]string { return maps.Clone(logicalDiskProperties) }

// ValidateRAIDConfig checks a target RAID configuration against the
// logical disk schema: {"logical_disks": [ {...}, ... ]}, at least one
// disk, only known keys, required raid_level and size_gb, at most one
// root volume. An empty configuration (clearing the target) is valid.
func ValidateRAIDConfig(config map[string]any) error {
	if len(config) == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return errs.InvalidParameterValue("RAID config validation error: %s", fmt.Sprintf(format, args...))
	}
	for k := range config {
		if k != "logical_disks" {
			return bad("Additional properties are not allowed ('%s' was unexpected)", k)
		}
	}
	disks, ok := config["logical_disks"].([]any)
	if !ok {
		return bad("'logical_disks' must be a list of logical disks")
	}
	if len(disks) == 0 {
		return bad("'logical_disks' must name at least one logical disk")
	}
	roots := 0
	for i, raw := range disks {
		disk, ok := raw.(map[string]any)
		if !ok {
			return bad("logical disk %d is not an object", i)
		}
		if err := validateLogicalDisk(disk); err != nil {
			return bad("logical disk %d: %s", i, err)
		}
		if root, _ := disk["is_root_volume"].(bool); root {
			roots++
		}
	}
	if roots > 1 {
		return bad("only one logical disk can be the root volume")
	}
	return nil
}

func validateLogicalDisk(disk map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(disk)) {
		if _, known := logicalDiskProperties[k]; !known {
			return fmt.Errorf("additional properties are not allowed ('%s' was unexpected)", k)
		}
	}
	for _, k := range []string{"raid_level", "size_gb"} {
		if _, ok := disk[k]; !ok {
			return fmt.Errorf("'%s' is a required property", k)
		}
	}
	if lvl, ok := disk["raid_level"].(string); !ok || !slices.Contains(RAIDLevels, lvl) {
		return fmt.Errorf("raid_level %s is not one of %s", jsonText(disk["raid_level"]), strings.Join(RAIDLevels, ", "))
	}
	if s, isStr := disk["size_gb"].(string); isStr {
		if s != "MAX" {
			return fmt.Errorf("size_gb must be a non-negative integer or \"MAX\"")
		}
	} else if n, ok := integer(disk["size_gb"]); !ok || n < 0 {
		return fmt.Errorf("size_gb must be a non-negative integer or \"MAX\"")
	}
	for _, k := range []string{"volume_name", "controller"} {
		if v, given := disk[k]; given {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s must be a string", k)
			}
		}
	}
	for _, k := range []string{"is_root_volume", "share_physical_disks"} {
		if v, given := disk[k]; given {
			if _, ok := v.(bool); !ok {
				return fmt.Errorf("%s must be a boolean", k)
			}
		}
	}
	enums := map[string][]string{"disk_type": {"hdd", "ssd"}, "interface_type": {"sata", "scsi", "sas"}}
	for _, k := range []string{"disk_type", "interface_type"} {
		if v, given := disk[k]; given {
			if s, ok := v.(string); !ok || !slices.Contains(enums[k], s) {
				return fmt.Errorf("%s %s is not one of %s", k, jsonText(v), strings.Join(enums[k], ", "))
			}
		}
	}
	if v, given := disk["number_of_physical_disks"]; given {
		if n, ok := integer(v); !ok || n < 1 {
			return fmt.Errorf("number_of_physical_disks must be a positive integer")
		}
	}
	if v, given := disk["physical_disks"]; given {
		if _, ok := v.([]any); !ok {
			return fmt.Errorf("physical_disks must be a list")
		}
	}
	return nil
}

// integer reads a JSON number that is a whole number, whichever way it
// was decoded.
func integer(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case float64:
		if n != math.Trunc(n) || math.IsInf(n, 0) {
			return 0, false
		}
		return int64(n), true
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
