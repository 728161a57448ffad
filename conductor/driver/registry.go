package driver

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
)

// Implementation is one named implementation of an interface type.
type Implementation struct {
	Name string
	Impl Interface
}

// HardwareType bundles, for every interface type, the implementations a
// node of this type may use. The first implementation listed for a type is
// the default a node gets when it names none.
type HardwareType struct {
	Name       string
	Interfaces map[hwcatalog.InterfaceType][]Implementation
}

// One is the implementation list of an interface type with a single
// implementation.
func One(name string, impl Interface) []Implementation {
	return []Implementation{{Name: name, Impl: impl}}
}

// WithNoOps returns ifaces completed with the no-op implementation of
// every optional interface type they leave out (bios, console, inspect,
// network, raid, rescue, storage, vendor), as every BMC-backed hardware
// type offers them.
func WithNoOps(ifaces map[hwcatalog.InterfaceType][]Implementation) map[hwcatalog.InterfaceType][]Implementation {
	out := map[hwcatalog.InterfaceType][]Implementation{
		hwcatalog.Bios:    One("no-bios", NoOp{}),
		hwcatalog.Console: One("no-console", NoOp{}),
		hwcatalog.Inspect: One("no-inspect", NoInspect{}),
		hwcatalog.Network: One("noop", NoopNetwork{}),
		hwcatalog.RAID:    One("no-raid", NoOp{}),
		hwcatalog.Rescue:  One("no-rescue", NoOp{}),
		hwcatalog.Storage: One("noop", NoOp{}),
		hwcatalog.Vendor:  One("no-vendor", NoOp{}),
	}
	maps.Copy(out, ifaces)
	return out
}

// Registry holds the hardware types enabled on this process.
type Registry struct {
	types   map[string]HardwareType
	names   []string
	catalog *hwcatalog.Catalog
}

// NewRegistry enables the named hardware types out of the available ones.
// Every enabled type must offer at least one implementation of every
// interface type, so any node can be resolved completely.
func NewRegistry(enabled []string, available ...HardwareType) (*Registry, error) {
	byName := make(map[string]HardwareType, len(available))
	for _, hw := range available {
		byName[hw.Name] = hw
	}
	r := &Registry{types: map[string]HardwareType{}}
	for _, name := range enabled {
		hw, ok := byName[name]
		if !ok {
			return nil, errs.DriverNotFound(name)
		}
		for _, it := range hwcatalog.InterfaceTypes {
			if len(hw.Interfaces[it]) == 0 {
				return nil, fmt.Errorf("hardware type %s: no %s interface implementation", name, it)
			}
		}
		if _, dup := r.types[name]; !dup {
			r.names = append(r.names, name)
		}
		r.types[name] = hw
	}
	if len(r.names) == 0 {
		return nil, fmt.Errorf("no hardware type enabled")
	}
	sort.Strings(r.names)
	var rows []model.ConductorHardwareInterface
	for _, name := range r.names {
		for _, it := range hwcatalog.InterfaceTypes {
			for i, impl := range r.types[name].Interfaces[it] {
				rows = append(rows, model.ConductorHardwareInterface{
					HardwareType: name, InterfaceType: string(it), InterfaceName: impl.Name, Default: i == 0,
				})
			}
		}
	}
	r.catalog = hwcatalog.New(rows)
	return r, nil
}

// Catalog describes the enabled hardware types: what this conductor
// registers.
func (r *Registry) Catalog() *hwcatalog.Catalog { return r.catalog }

// HardwareTypes lists the enabled hardware type names, sorted.
func (r *Registry) HardwareTypes() []string { return r.catalog.HardwareTypes() }

func (r *Registry) hardwareType(name string) (HardwareType, error) {
	hw, ok := r.types[name]
	if !ok {
		return HardwareType{}, errs.DriverNotFound(name)
	}
	return hw, nil
}

// Enabled lists the implementation names of one interface type for a
// hardware type, the default first.
func (r *Registry) Enabled(hwType string, it hwcatalog.InterfaceType) ([]string, error) {
	return r.catalog.Enabled(hwType, it)
}

// Defaults maps every interface type to the implementation a node of
// hwType uses when it names none.
func (r *Registry) Defaults(hwType string) (map[hwcatalog.InterfaceType]string, error) {
	return r.catalog.Defaults(hwType)
}

// ValidateInterfaces checks that node.Driver is enabled and that every
// interface the node names is an implementation of that hardware type.
func (r *Registry) ValidateInterfaces(node *model.Node) error { return r.catalog.Validate(node) }

// ResolveInterfaces validates the node's interfaces and fills every unset
// one with the hardware type's default.
func (r *Registry) ResolveInterfaces(node *model.Node) error { return r.catalog.Resolve(node) }

func find(hw HardwareType, it hwcatalog.InterfaceType, name string) (Interface, bool) {
	for _, impl := range hw.Interfaces[it] {
		if impl.Name == name {
			return impl.Impl, true
		}
	}
	return nil, false
}

// Driver is a node's resolved set of interface implementations.
type Driver struct {
	HardwareType string
	names        map[hwcatalog.InterfaceType]string
	impls        map[hwcatalog.InterfaceType]Interface
	Power        PowerInterface
	Management   ManagementInterface
	Deploy       DeployInterface
	Boot         BootInterface
	Inspect      InspectInterface
}

// Load resolves the implementations the node uses: its named interfaces,
// or the hardware type's defaults for unset ones.
func (r *Registry) Load(node *model.Node) (*Driver, error) {
	if err := r.ValidateInterfaces(node); err != nil {
		return nil, err
	}
	hw := r.types[node.Driver]
	d := &Driver{
		HardwareType: hw.Name,
		names:        make(map[hwcatalog.InterfaceType]string, len(hwcatalog.InterfaceTypes)),
		impls:        make(map[hwcatalog.InterfaceType]Interface, len(hwcatalog.InterfaceTypes)),
	}
	for _, it := range hwcatalog.InterfaceTypes {
		name := hw.Interfaces[it][0].Name
		if set := *hwcatalog.Field(node, it); set != nil {
			name = *set
		}
		impl, _ := find(hw, it, name)
		d.names[it] = name
		d.impls[it] = impl
	}
	var ok bool
	if d.Power, ok = d.impls[hwcatalog.Power].(PowerInterface); !ok {
		return nil, fmt.Errorf("hardware type %s: power interface %s does not control power", hw.Name, d.names[hwcatalog.Power])
	}
	if d.Management, ok = d.impls[hwcatalog.Management].(ManagementInterface); !ok {
		return nil, fmt.Errorf("hardware type %s: management interface %s is incomplete", hw.Name, d.names[hwcatalog.Management])
	}
	if d.Deploy, ok = d.impls[hwcatalog.Deploy].(DeployInterface); !ok {
		return nil, fmt.Errorf("hardware type %s: deploy interface %s is incomplete", hw.Name, d.names[hwcatalog.Deploy])
	}
	if d.Boot, ok = d.impls[hwcatalog.Boot].(BootInterface); !ok {
		return nil, fmt.Errorf("hardware type %s: boot interface %s is incomplete", hw.Name, d.names[hwcatalog.Boot])
	}
	if d.Inspect, ok = d.impls[hwcatalog.Inspect].(InspectInterface); !ok {
		return nil, fmt.Errorf("hardware type %s: inspect interface %s is incomplete", hw.Name, d.names[hwcatalog.Inspect])
	}
	return d, nil
}

// Interface returns the implementation used for an interface type.
func (d *Driver) Interface(it hwcatalog.InterfaceType) Interface { return d.impls[it] }

// InterfaceName returns the name of the implementation used for it.
func (d *Driver) InterfaceName(it hwcatalog.InterfaceType) string { return d.names[it] }

// CleanSteps collects the clean steps of every interface that offers some.
func (d *Driver) CleanSteps(ctx context.Context, t TaskContext) ([]CleanStep, error) {
	var steps []CleanStep
	for _, it := range hwcatalog.InterfaceTypes {
		cs, ok := Lookup[CleanStepper](d, it)
		if !ok {
			continue
		}
		s, err := cs.CleanSteps(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("%s interface clean steps: %w", it, err)
		}
		steps = append(steps, s...)
	}
	return steps, nil
}
