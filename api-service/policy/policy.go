// Package policy decides what a request's credentials may do, in Ironic's
// secure-RBAC form: every API operation is a named rule
// ("baremetal:node:update") whose check string says which roles in which
// scope pass; by default system-scoped readers read, members also change
// nodes and their parts, admins also create and delete them, change
// driver_info and use vendor passthru, and project-scoped tokens act on
// the nodes their project owns or leases. A policy file (oslo.policy's YAML
// or JSON of rule name to check string) overrides any rule.
package policy

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/ferricbm/ferric/pkg/errs"
)

// The base rules the defaults are written with; overriding one changes
// every rule that names it.
const (
	systemAdmin  = "rule:system_admin"
	systemMember = "rule:system_member"
	systemReader = "rule:system_reader"
	// A project-scoped token of a node's owner or lessee project acts on
	// that node (Ironic's multi-tenancy); the target names the node's
	// owner and lessee. The service role acts as a member: system-wide
	// with a system-scoped token, on the nodes its project owns with a
	// project-scoped one.
	systemOrProjectReader = "rule:system_reader or rule:project_reader or rule:project_service"
	systemOrProjectMember = "rule:system_member or rule:project_member or rule:system_service"
	// Provisioning and maintenance: the owner's members, but only the
	// lessee's admins.
	systemOrOwnerMemberOrLesseeAdmin = "rule:system_member or rule:system_service or rule:project_owner_member or rule:project_lessee_admin or rule:project_service"
	systemOrOwnerMember              = "rule:system_member or rule:system_service or rule:project_owner_member or rule:project_service"
	systemOrOwnerAdmin               = "rule:system_member or rule:system_service or rule:project_owner_admin or rule:project_service"
	// What the owner's readers see of a node that its lessee's do not:
	// driver_info, driver_internal_info, last_error and reservation.
	systemOrOwnerReader = "rule:system_reader or rule:system_service or rule:project_owner_reader or rule:project_service"
)

// base are the personas. As in Ironic, a token with the service role on
// the service project (service_role; override it where that project has
// another name) is a system member and reader wherever it is scoped: it is
// what Nova's driver and other services ask with.
var base = map[string]string{
	"service_role":         "role:service and project_name:service",
	"system_admin":         "role:admin and system_scope:all",
	"system_member":        "(role:member and system_scope:all) or rule:service_role",
	"system_reader":        "(role:reader and system_scope:all) or rule:system_service or rule:service_role",
	"system_service":       "role:service and system_scope:all",
	"project_service":      "role:service and project_id:%(node.owner)s",
	"project_owner_admin":  "role:admin and project_id:%(node.owner)s",
	"project_owner_member": "role:member and project_id:%(node.owner)s",
	"project_owner_reader": "role:reader and project_id:%(node.owner)s",
	"project_lessee_admin": "role:admin and project_id:%(node.lessee)s",
	"project_member":       "role:member and (project_id:%(node.owner)s or project_id:%(node.lessee)s)",
	"project_reader":       "role:reader and (project_id:%(node.owner)s or project_id:%(node.lessee)s)",
}

// Defaults are the rules in force without a policy file. Names are
// Ironic's, and so are the project-scoped parts of the node rules; where
// Ironic lets a system member or the node's owner change driver_info,
// Ferric keeps it to system admins, since it holds the BMC credentials.
// Ports, port groups, chassis, volume objects, drivers, conductors and
// allocations (until they have an owner, 1.60) stay system-scoped.
var Defaults = map[string]string{
	"baremetal:node:create":                             systemAdmin,
	"baremetal:node:get":                                systemOrProjectReader,
	"baremetal:node:list":                               "role:reader or role:service",
	"baremetal:node:list_all":                           systemReader,
	"baremetal:node:get:filter_threshold":               systemReader,
	"baremetal:node:get:driver_info":                    systemOrOwnerReader,
	"baremetal:node:get:driver_internal_info":           systemOrOwnerReader,
	"baremetal:node:get:last_error":                     systemOrOwnerReader,
	"baremetal:node:get:reservation":                    systemOrOwnerReader,
	"baremetal:node:update":                             systemOrProjectMember,
	"baremetal:node:update_extra":                       systemOrProjectMember,
	"baremetal:node:update_instance_info":               systemOrOwnerMemberOrLesseeAdmin,
	"baremetal:node:update_owner_provisioned":           systemAdmin,
	"baremetal:node:disable_cleaning":                   systemAdmin,
	"baremetal:node:update:driver_info":                 systemAdmin,
	"baremetal:node:update:properties":                  systemOrOwnerMember,
	"baremetal:node:update:chassis_uuid":                systemAdmin,
	"baremetal:node:update:instance_uuid":               systemOrOwnerMember,
	"baremetal:node:update:lessee":                      systemOrOwnerMember,
	"baremetal:node:update:owner":                       systemMember,
	"baremetal:node:update:driver_interfaces":           systemOrOwnerAdmin,
	"baremetal:node:update:network_data":                systemOrOwnerMember,
	"baremetal:node:update:conductor_group":             systemMember,
	"baremetal:node:update:name":                        systemOrOwnerMember,
	"baremetal:node:update:retired":                     systemOrOwnerMember,
	"baremetal:node:delete":                             systemAdmin,
	"baremetal:node:validate":                           "rule:system_reader or rule:project_owner_member or rule:project_lessee_admin",
	"baremetal:node:set_maintenance":                    systemOrOwnerMemberOrLesseeAdmin,
	"baremetal:node:clear_maintenance":                  systemOrOwnerMemberOrLesseeAdmin,
	"baremetal:node:get_boot_device":                    "rule:system_reader or rule:project_owner_admin",
	"baremetal:node:set_boot_device":                    systemOrOwnerAdmin,
	"baremetal:node:inject_nmi":                         systemOrOwnerAdmin,
	"baremetal:node:get_states":                         systemOrProjectReader,
	"baremetal:node:set_power_state":                    systemOrProjectMember,
	"baremetal:node:set_provision_state":                systemOrOwnerMemberOrLesseeAdmin,
	"baremetal:node:set_raid_state":                     systemOrOwnerMember,
	"baremetal:node:get_console":                        systemOrOwnerMember,
	"baremetal:node:set_console_state":                  systemOrOwnerMember,
	"baremetal:node:traits:list":                        systemOrProjectReader,
	"baremetal:node:traits:set":                         systemOrOwnerMember,
	"baremetal:node:traits:delete":                      systemOrOwnerMember,
	"baremetal:node:vendor_passthru":                    systemAdmin,
	"baremetal:node:vif:list":                           systemOrProjectReader,
	"baremetal:node:vif:attach":                         systemOrOwnerMemberOrLesseeAdmin,
	"baremetal:node:vif:detach":                         systemOrOwnerMemberOrLesseeAdmin,
	"baremetal:node:bios:get":                           systemOrProjectReader,
	"baremetal:node:ipa_heartbeat":                      "",
	"baremetal:driver:ipa_lookup":                       "",
	"baremetal:port:get":                                systemReader,
	"baremetal:port:list":                               systemReader,
	"baremetal:port:create":                             systemAdmin,
	"baremetal:port:update":                             systemMember,
	"baremetal:port:delete":                             systemAdmin,
	"baremetal:portgroup:get":                           systemReader,
	"baremetal:portgroup:list":                          systemReader,
	"baremetal:portgroup:create":                        systemAdmin,
	"baremetal:portgroup:update":                        systemMember,
	"baremetal:portgroup:delete":                        systemAdmin,
	"baremetal:chassis:get":                             systemReader,
	"baremetal:chassis:create":                          systemAdmin,
	"baremetal:chassis:update":                          systemMember,
	"baremetal:chassis:delete":                          systemAdmin,
	"baremetal:driver:get":                              systemReader,
	"baremetal:driver:get_properties":                   systemReader,
	"baremetal:driver:get_raid_logical_disk_properties": systemReader,
	"baremetal:driver:vendor_passthru":                  systemAdmin,
	"baremetal:volume:get":                              systemReader,
	"baremetal:volume:list":                             systemReader,
	"baremetal:volume:create":                           systemAdmin,
	"baremetal:volume:update":                           systemMember,
	"baremetal:volume:delete":                           systemAdmin,
	"baremetal:conductor:get":                           systemReader,
	"baremetal:allocation:get":                          systemReader,
	"baremetal:allocation:list":                         systemReader,
	"baremetal:allocation:create":                       systemMember,
	"baremetal:allocation:update":                       systemMember,
	"baremetal:allocation:delete":                       systemMember,
	"baremetal:events:post":                             "rule:system_admin or rule:service_role",
}

// rules is a resolved rule set.
type rules struct {
	checks map[string]check
}

// Enforcer answers whether credentials pass a rule.
type Enforcer struct {
	r *rules
}

// Options change how the defaults apply.
type Options struct {
	// Legacy is oslo.policy's enforce_new_defaults = false: every default
	// rule not overridden also passes rule:is_admin, the pre-RBAC rule
	// that Ironic's node rules name as their deprecated form.
	Legacy bool
}

// legacy are the pre-RBAC rules. Ironic's is_admin also passes the
// baremetal_admin role in projects called demo or baremetal; Ferric keeps
// to the admin roles.
var legacy = map[string]string{
	"admin_api": "role:admin or role:administrator",
	"is_admin":  "rule:admin_api",
}

// New builds an Enforcer from the defaults overridden by overrides (rule
// name to check string). A check that does not parse, or names a rule
// that does not exist or names itself through others, is an error.
func New(overrides map[string]string) (*Enforcer, error) { return NewWith(overrides, Options{}) }

// NewWith is New with options.
func NewWith(overrides map[string]string, o Options) (*Enforcer, error) {
	texts := maps.Clone(base)
	maps.Copy(texts, legacy)
	maps.Copy(texts, Defaults)
	if o.Legacy {
		for name, check := range Defaults {
			if check != "" {
				texts[name] = "(" + check + ") or rule:is_admin"
			}
		}
	}
	maps.Copy(texts, overrides)
	r := &rules{checks: make(map[string]check, len(texts))}
	refs := map[string][]string{}
	names := slices.Sorted(maps.Keys(texts))
	for _, name := range names {
		k, named, err := parseCheck(texts[name])
		if err != nil {
			return nil, fmt.Errorf("policy rule %s: %w", name, err)
		}
		r.checks[name], refs[name] = k, named
	}
	for _, name := range names {
		for _, ref := range refs[name] {
			if _, ok := texts[ref]; !ok {
				return nil, fmt.Errorf("policy rule %s: rule:%s is not defined", name, ref)
			}
		}
		if cycle(name, refs, nil) {
			return nil, fmt.Errorf("policy rule %s: refers to itself through rule: checks", name)
		}
	}
	return &Enforcer{r: r}, nil
}

func cycle(name string, refs map[string][]string, path []string) bool {
	if slices.Contains(path, name) {
		return true
	}
	path = append(path, name)
	for _, ref := range refs[name] {
		if cycle(ref, refs, path) {
			return true
		}
	}
	return false
}

// Load builds an Enforcer from a policy file: a YAML (or JSON, which YAML
// reads too) mapping of rule names to check strings. An empty path means
// the defaults.
func Load(path string, o Options) (*Enforcer, error) {
	if path == "" {
		return NewWith(nil, o)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	var overrides map[string]string
	if err := yaml.Unmarshal(raw, &overrides); err != nil {
		return nil, fmt.Errorf("policy file %s: expected a mapping of rule names to check strings: %w", path, err)
	}
	e, err := NewWith(overrides, o)
	if err != nil {
		return nil, fmt.Errorf("policy file %s: %w", path, err)
	}
	return e, nil
}

// Known reports whether rule is defined.
func (e *Enforcer) Known(rule string) bool {
	_, ok := e.r.checks[rule]
	return ok
}

// Allowed reports whether c passes rule on target t (nil when the rule
// acts on no node); an unknown rule passes no one.
func (e *Enforcer) Allowed(rule string, c Credentials, t Target) bool {
	k, ok := e.r.checks[rule]
	return ok && k.allowed(e.r, c, t, 0)
}

// Authorize is Allowed as Ironic answers it: 403 naming the rule.
func (e *Enforcer) Authorize(rule string, c Credentials, t Target) error {
	if e.Allowed(rule, c, t) {
		return nil
	}
	return errs.New(errs.KindNotAuthorized, "Access was denied to the following resource: %s", rule)
}
