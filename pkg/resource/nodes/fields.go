// Package nodes holds the node resource's API rules that do not need HTTP:
// the field catalogue (versions, create/patch permissions, types), create
// body decoding, JSON-PATCH application, the update guards, representation
// and the validation of provision and power requests.
package nodes

import (
	"regexp"
	"strings"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// Field is one top-level node attribute.
type Field = catalogue.Field[model.Node]

func str(name string, nullable bool, maxLen int, ptr func(*model.Node) **string) func(*model.Node, any) error {
	return catalogue.Text("node", name, catalogue.TextRule{Required: !nullable, MaxLen: maxLen},
		func(n *model.Node, s *string) { *ptr(n) = s })
}

func obj(name string, ptr func(*model.Node) *model.JSONObject) func(*model.Node, any) error {
	return catalogue.Object("node", name, ptr)
}

// AsBool accepts a JSON boolean or a boolean string, as Ironic's schema
// does for node booleans.
func AsBool(name string, v any) (bool, error) { return catalogue.AsBool("node", name, v) }

func boolean(name string, ptr func(*model.Node) *bool) func(*model.Node, any) error {
	return catalogue.Bool("node", name, false, ptr)
}

func nullBool(name string, ptr func(*model.Node) **bool) func(*model.Node, any) error {
	return func(n *model.Node, v any) error {
		if v == nil {
			*ptr(n) = nil
			return nil
		}
		b, err := AsBool(name, v)
		if err != nil {
			return err
		}
		*ptr(n) = &b
		return nil
	}
}

func sp(s *string) any { return present.Str(s) }

func timeVal(t *time.Time) any { return present.Time(t) }

var groupPattern = regexp.MustCompile(`^[A-Za-z0-9_.-]*$`)

func iface(name string, since microversion.Version, ptr func(*model.Node) **string) Field {
	return Field{Name: name, Since: since, Create: true, Patch: true, Sortable: true,
		Get:  func(n *model.Node) any { return sp(*ptr(n)) },
		Text: func(n *model.Node) *string { return *ptr(n) },
		Set:  str(name, true, 255, ptr)}
}

// unstored is an attribute of a microversion newer than this service
// negotiates; it exists in the catalogue so that supplying it yields the
// documented 406 rather than a 400 for an unknown key.
func unstored(name string, since int, create, patch bool) Field {
	return Field{Name: name, Since: microversion.V1(since), Create: create, Patch: patch}
}

// withFilters gives a row its list filters.
func withFilters(f Field, filters ...catalogue.Filter) Field {
	f.Filters = filters
	return f
}

var v1 = microversion.V1(1)

// Catalogue lists every node attribute in output order.
var Catalogue = []Field{
	{Name: "uuid", Since: v1, Create: true, Sortable: true, Get: func(n *model.Node) any { return n.UUID }, Text: func(n *model.Node) *string { return &n.UUID }},
	{Name: "name", Since: microversion.NodeNames, Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.Name) }, Text: func(n *model.Node) *string { return n.Name },
		Set: str("name", true, 255, func(n *model.Node) **string { return &n.Name })},
	{Name: "driver", Since: v1, Create: true, Patch: true, Required: true, Sortable: true,
		Get: func(n *model.Node) any { return n.Driver }, Text: func(n *model.Node) *string { return &n.Driver },
		Set: catalogue.Text("node", "driver", catalogue.TextRule{Required: true, MaxLen: 255},
			func(n *model.Node, s *string) { n.Driver = *s }),
		Filters: []catalogue.Filter{{Since: microversion.DriverFilter}}},
	{Name: "driver_info", Since: v1, Create: true, Patch: true, Masked: true,
		Get:    func(n *model.Node) any { return map[string]any(n.DriverInfo) },
		Object: func(n *model.Node) *model.JSONObject { return &n.DriverInfo },
		Set:    obj("driver_info", func(n *model.Node) *model.JSONObject { return &n.DriverInfo })},
	{Name: "driver_internal_info", Since: microversion.V1(3), Masked: true,
		Get:    func(n *model.Node) any { return map[string]any(n.DriverInternalInfo) },
		Object: func(n *model.Node) *model.JSONObject { return &n.DriverInternalInfo }},
	{Name: "properties", Since: v1, Create: true, Patch: true,
		Get:    func(n *model.Node) any { return map[string]any(n.Properties) },
		Object: func(n *model.Node) *model.JSONObject { return &n.Properties },
		Set:    obj("properties", func(n *model.Node) *model.JSONObject { return &n.Properties })},
	{Name: "instance_info", Since: v1, Create: true, Patch: true,
		Mask:   func(v any) any { return secrets.MaskInstanceInfo(v.(map[string]any)) },
		Get:    func(n *model.Node) any { return map[string]any(n.InstanceInfo) },
		Object: func(n *model.Node) *model.JSONObject { return &n.InstanceInfo },
		Set:    obj("instance_info", func(n *model.Node) *model.JSONObject { return &n.InstanceInfo })},
	{Name: "instance_uuid", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.InstanceUUID) }, Text: func(n *model.Node) *string { return n.InstanceUUID },
		Set:     uuidField("instance_uuid", func(n *model.Node) **string { return &n.InstanceUUID }),
		Filters: []catalogue.Filter{{Query: catalogue.QueryUUID}, {Param: "associated", Query: catalogue.QueryBool, Op: filter.Set}}},
	{Name: "chassis_uuid", Since: v1, Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.ChassisUUID) }, Text: func(n *model.Node) *string { return n.ChassisUUID },
		Set:     uuidField("chassis_uuid", func(n *model.Node) **string { return &n.ChassisUUID }),
		Filters: []catalogue.Filter{{Query: catalogue.QueryUUID}}},
	{Name: "extra", Since: v1, Create: true, Patch: true,
		Get:    func(n *model.Node) any { return map[string]any(n.Extra) },
		Object: func(n *model.Node) *model.JSONObject { return &n.Extra },
		Set:    obj("extra", func(n *model.Node) *model.JSONObject { return &n.Extra })},
	{Name: "power_state", Since: v1, Sortable: true, Get: func(n *model.Node) any { return sp(n.PowerState) }, Text: func(n *model.Node) *string { return n.PowerState }},
	{Name: "target_power_state", Since: v1, Sortable: true, Get: func(n *model.Node) any { return sp(n.TargetPowerState) }, Text: func(n *model.Node) *string { return n.TargetPowerState }},
	{Name: "provision_state", Since: v1, Sortable: true, Get: func(n *model.Node) any { return sp(n.ProvisionState) },
		Show:    func(n *model.Node, v microversion.Version) any { return ProvisionStateAt(n.ProvisionState, v) },
		Filters: []catalogue.Filter{{Since: microversion.ProvisionFilter, Query: catalogue.QueryStates, Op: filter.In}}},
	{Name: "target_provision_state", Since: v1, Sortable: true, Get: func(n *model.Node) any { return sp(n.TargetProvisionState) }, Text: func(n *model.Node) *string { return n.TargetProvisionState }},
	{Name: "provision_updated_at", Since: v1, Sortable: true, Get: func(n *model.Node) any { return timeVal(n.ProvisionUpdatedAt) }},
	{Name: "maintenance", Since: v1, Create: true, Patch: true, Sortable: true,
		Get:     func(n *model.Node) any { return n.Maintenance },
		Set:     boolean("maintenance", func(n *model.Node) *bool { return &n.Maintenance }),
		Filters: []catalogue.Filter{{Query: catalogue.QueryBool}}},
	{Name: "maintenance_reason", Since: v1, Sortable: true, Get: func(n *model.Node) any { return sp(n.MaintenanceReason) }, Text: func(n *model.Node) *string { return n.MaintenanceReason }},
	{Name: "fault", Since: microversion.V1(42), Sortable: true, Get: func(n *model.Node) any { return sp(n.Fault) }, Text: func(n *model.Node) *string { return n.Fault },
		Filters: []catalogue.Filter{{Query: catalogue.QueryOneOf, OneOf: []string{"power failure", "clean failure", "rescue abort failure", "service failure"}}}},
	{Name: "last_error", Since: v1, Sortable: true, Get: func(n *model.Node) any { return sp(n.LastError) }, Masked: true},
	{Name: "reservation", Since: v1, Sortable: true, Get: func(n *model.Node) any { return sp(n.Reservation) }, Text: func(n *model.Node) *string { return n.Reservation }},
	{Name: "console_enabled", Since: v1, Create: true, Sortable: true,
		Get: func(n *model.Node) any { return n.ConsoleEnabled },
		Set: boolean("console_enabled", func(n *model.Node) *bool { return &n.ConsoleEnabled })},
	{Name: "clean_step", Since: microversion.V1(7), Get: func(n *model.Node) any { return map[string]any(n.CleanStep) },
		Object: func(n *model.Node) *model.JSONObject { return &n.CleanStep }},
	{Name: "deploy_step", Since: microversion.V1(44), Get: func(n *model.Node) any { return map[string]any(n.DeployStep) },
		Object: func(n *model.Node) *model.JSONObject { return &n.DeployStep }},
	{Name: "raid_config", Since: microversion.V1(12), Get: func(n *model.Node) any { return map[string]any(n.RAIDConfig) },
		Object: func(n *model.Node) *model.JSONObject { return &n.RAIDConfig }},
	{Name: "target_raid_config", Since: microversion.V1(12), Get: func(n *model.Node) any { return map[string]any(n.TargetRAIDConfig) },
		Object: func(n *model.Node) *model.JSONObject { return &n.TargetRAIDConfig }},
	{Name: "inspection_started_at", Since: microversion.InspectVerb, Sortable: true, Get: func(n *model.Node) any { return timeVal(n.InspectionStartedAt) }},
	{Name: "inspection_finished_at", Since: microversion.InspectVerb, Sortable: true, Get: func(n *model.Node) any { return timeVal(n.InspectionFinishedAt) }},
	{Name: "resource_class", Since: microversion.ResourceClassField, Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.ResourceClass) }, Text: func(n *model.Node) *string { return n.ResourceClass },
		Set:     str("resource_class", true, 80, func(n *model.Node) **string { return &n.ResourceClass }),
		Filters: []catalogue.Filter{{}}},
	iface("network_interface", microversion.V1(20), func(n *model.Node) **string { return &n.NetworkInterface }),
	iface("boot_interface", microversion.V1(31), func(n *model.Node) **string { return &n.BootInterface }),
	iface("console_interface", microversion.V1(31), func(n *model.Node) **string { return &n.ConsoleInterface }),
	iface("deploy_interface", microversion.V1(31), func(n *model.Node) **string { return &n.DeployInterface }),
	iface("inspect_interface", microversion.V1(31), func(n *model.Node) **string { return &n.InspectInterface }),
	iface("management_interface", microversion.V1(31), func(n *model.Node) **string { return &n.ManagementInterface }),
	iface("power_interface", microversion.V1(31), func(n *model.Node) **string { return &n.PowerInterface }),
	iface("raid_interface", microversion.V1(31), func(n *model.Node) **string { return &n.RAIDInterface }),
	iface("vendor_interface", microversion.V1(31), func(n *model.Node) **string { return &n.VendorInterface }),
	iface("storage_interface", microversion.V1(33), func(n *model.Node) **string { return &n.StorageInterface }),
	iface("rescue_interface", microversion.V1(38), func(n *model.Node) **string { return &n.RescueInterface }),
	iface("bios_interface", microversion.V1(40), func(n *model.Node) **string { return &n.BIOSInterface }),
	{Name: "traits", Since: microversion.V1(37), Get: func(n *model.Node) any { return traits(n.Traits) },
		List: func(n *model.Node) *model.StringList { return &n.Traits }},
	{Name: "conductor_group", Since: microversion.ConductorGroup, Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return n.ConductorGroup },
		Set: conductorGroup, Filters: []catalogue.Filter{{Query: catalogue.QueryLower}}},
	// conductor is computed from the hash ring, not stored: View.Conductor
	// supplies the value from the columns the ring is keyed by.
	{Name: "conductor", Since: microversion.ConductorField, Computed: true, Columns: []string{"driver", "conductor_group"},
		Get: func(*model.Node) any { return nil }, Filters: []catalogue.Filter{{}}},
	{Name: "automated_clean", Since: microversion.V1(47), Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return boolVal(n.AutomatedClean) },
		Set: nullBool("automated_clean", func(n *model.Node) **bool { return &n.AutomatedClean })},
	{Name: "protected", Since: microversion.V1(48), Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return n.Protected },
		Set: boolean("protected", func(n *model.Node) *bool { return &n.Protected })},
	{Name: "protected_reason", Since: microversion.V1(48), Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.ProtectedReason) }, Text: func(n *model.Node) *string { return n.ProtectedReason },
		Set: str("protected_reason", true, model.MaxText, func(n *model.Node) **string { return &n.ProtectedReason })},
	{Name: "owner", Since: microversion.V1(50), Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.Owner) }, Text: func(n *model.Node) *string { return n.Owner },
		Set:     str("owner", true, 255, func(n *model.Node) **string { return &n.Owner }),
		Filters: []catalogue.Filter{{}}},
	{Name: "description", Since: microversion.V1(51), Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.Description) }, Text: func(n *model.Node) *string { return n.Description },
		Set:     str("description", true, 4096, func(n *model.Node) **string { return &n.Description }),
		Filters: []catalogue.Filter{{Param: "description_contains", Op: filter.Contains}}},
	// allocation_uuid needs no join: while a node has an allocation, its
	// instance_uuid is the allocation's uuid.
	{Name: "allocation_uuid", Since: microversion.Allocations, Columns: []string{"allocation_id", "instance_uuid"},
		Get: func(n *model.Node) any { return sp(allocationUUID(n)) }, Text: allocationUUID},
	{Name: "retired", Since: microversion.V1(61), Create: true, Patch: true, Sortable: true,
		Get:     func(n *model.Node) any { return n.Retired },
		Set:     boolean("retired", func(n *model.Node) *bool { return &n.Retired }),
		Filters: []catalogue.Filter{{Query: catalogue.QueryBool}}},
	{Name: "retired_reason", Since: microversion.V1(61), Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.RetiredReason) }, Text: func(n *model.Node) *string { return n.RetiredReason },
		Set: str("retired_reason", true, model.MaxText, func(n *model.Node) **string { return &n.RetiredReason })},
	{Name: "lessee", Since: microversion.V1(65), Create: true, Patch: true, Sortable: true,
		Get: func(n *model.Node) any { return sp(n.Lessee) }, Text: func(n *model.Node) *string { return n.Lessee },
		Set:     str("lessee", true, 255, func(n *model.Node) **string { return &n.Lessee }),
		Filters: []catalogue.Filter{{}}},
	{Name: "created_at", Since: v1, Sortable: true, Get: func(n *model.Node) any { return timeVal(&n.CreatedAt) }},
	{Name: "updated_at", Since: v1, Sortable: true, Get: func(n *model.Node) any { return timeVal(n.UpdatedAt) }},

	unstored("network_data", 66, true, true),
	unstored("boot_mode", 75, true, false),
	unstored("secure_boot", 75, true, false),
	withFilters(unstored("shard", 82, true, true), catalogue.Filter{},
		catalogue.Filter{Param: "sharded", Query: catalogue.QueryBool, Op: filter.Set}),
	withFilters(unstored("parent_node", 83, true, true), catalogue.Filter{},
		catalogue.Filter{Param: "include_children", Query: catalogue.QueryBool}),
	unstored("firmware_interface", 86, true, true),
	unstored("disable_power_off", 95, true, true),
	withFilters(unstored("instance_name", 104, true, true), catalogue.Filter{}),
}

// Resource is the node catalogue and representation.
var Resource = catalogue.New(&catalogue.Catalogue[model.Node]{Resource: "node", Fields: Catalogue,
	Defaults:   []string{"instance_uuid", "maintenance", "power_state", "provision_state", "uuid", "name"},
	Path:       func(n *model.Node) string { return "nodes/" + n.UUID },
	UUID:       func(n *model.Node) string { return n.UUID },
	NewUUID:    func(n *model.Node) *string { return &n.UUID },
	NilObjects: true,
	SubLinks: []catalogue.SubLink{{Name: "ports", Since: microversion.Min}, {Name: "states", Since: microversion.StatesLink},
		{Name: "portgroups", Since: microversion.PortgroupLinks}, {Name: "volume", Since: microversion.VolumeAPI}},
	Unsortable: []string{"network_data", "service_step"},
	SizeHint:   2560,
})

func uuidField(name string, ptr func(*model.Node) **string) func(*model.Node, any) error {
	return catalogue.Text("node", name, catalogue.TextRule{MaxLen: 36, Check: catalogue.UUID(name)},
		func(n *model.Node, s *string) { *ptr(n) = s })
}

func conductorGroup(n *model.Node, v any) error {
	return catalogue.Text("node", "conductor_group", catalogue.TextRule{Check: func(s string) (string, error) {
		if len(s) > 255 || !groupPattern.MatchString(s) {
			return "", errs.InvalidParameterValue("Invalid conductor group %s: only letters, digits, '_', '.' and '-' are allowed", s)
		}
		return strings.ToLower(s), nil
	}}, func(n *model.Node, s *string) {
		n.ConductorGroup = ""
		if s != nil {
			n.ConductorGroup = *s
		}
	})(n, v)
}

func allocationUUID(n *model.Node) *string {
	if n.AllocationID == nil {
		return nil
	}
	return n.InstanceUUID
}

func traits(t model.StringList) []string {
	if t == nil {
		return []string{}
	}
	return []string(t)
}

func boolVal(b *bool) any { return present.BoolPtr(b) }
