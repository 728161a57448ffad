// Package policy decides what a request's credentials may do, in Ironic's
// secure-RBAC form: every API operation is a named rule
// ("baremetal:node:update") whose check string says which roles in which
// scope pass; by default system-scoped readers read, members also change
// nodes and their parts, admins also create and delete them, change
// driver_info and use vendor passthru. A policy file (oslo.policy's YAML
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
)

var base = map[string]string{
	"system_admin":  "role:admin and system_scope:all",
	"system_member": "role:member and system_scope:all",
	"system_reader": "role:reader and system_scope:all",
}

// Defaults are the rules in force without a policy file. Names are
// Ironic's; where Ironic lets a system member change driver_info, Ferric
// keeps it to admins, since it holds the BMC credentials.
var Defaults = map[string]string{
	"baremetal:node:create":                             systemAdmin,
	"baremetal:node:get":                                systemReader,
	"baremetal:node:list":                               systemReader,
	"baremetal:node:update":                             systemMember,
	"baremetal:node:update:driver_info":                 systemAdmin,
	"baremetal:node:delete":                             systemAdmin,
	"baremetal:node:validate":                           systemReader,
	"baremetal:node:set_maintenance":                    systemMember,
	"baremetal:node:clear_maintenance":                  systemMember,
	"baremetal:node:get_boot_device":                    systemReader,
	"baremetal:node:set_boot_device":                    systemMember,
	"baremetal:node:inject_nmi":                         systemMember,
	"baremetal:node:get_states":                         systemReader,
	"baremetal:node:set_power_state":                    systemMember,
	"baremetal:node:set_provision_state":                systemMember,
	"baremetal:node:set_raid_state":                     systemMember,
	"baremetal:node:get_console":                        systemMember,
	"baremetal:node:set_console_state":                  systemMember,
	"baremetal:node:traits:list":                        systemReader,
	"baremetal:node:traits:set":                         systemMember,
	"baremetal:node:traits:delete":                      systemMember,
	"baremetal:node:vendor_passthru":                    systemAdmin,
	"baremetal:node:vif:list":                           systemReader,
	"baremetal:node:vif:attach":                         systemMember,
	"baremetal:node:vif:detach":                         systemMember,
	"baremetal:node:bios:get":                           systemReader,
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
}

// rules is a resolved rule set.
type rules struct {
	checks map[string]check
}

// Enforcer answers whether credentials pass a rule.
type Enforcer struct {
	r *rules
}

// New builds an Enforcer from the defaults overridden by overrides (rule
// name to check string). A check that does not parse, or names a rule
// that does not exist or names itself through others, is an error.
func New(overrides map[string]string) (*Enforcer, error) {
	texts := maps.Clone(base)
	maps.Copy(texts, Defaults)
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
func Load(path string) (*Enforcer, error) {
	if path == "" {
		return New(nil)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read policy file: %w", err)
	}
	var overrides map[string]string
	if err := yaml.Unmarshal(raw, &overrides); err != nil {
		return nil, fmt.Errorf("policy file %s: expected a mapping of rule names to check strings: %w", path, err)
	}
	e, err := New(overrides)
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

// Allowed reports whether c passes rule; an unknown rule passes no one.
func (e *Enforcer) Allowed(rule string, c Credentials) bool {
	k, ok := e.r.checks[rule]
	return ok && k.allowed(e.r, c, 0)
}

// Authorize is Allowed as Ironic answers it: 403 naming the rule.
func (e *Enforcer) Authorize(rule string, c Credentials) error {
	if e.Allowed(rule, c) {
		return nil
	}
	return errs.New(errs.KindNotAuthorized, "Access was denied to the following resource: %s", rule)
}
