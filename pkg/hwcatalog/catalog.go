// Package hwcatalog describes the hardware types the conductors offer: the
// interface kinds a node is driven through, the implementations of each
// kind a hardware type enables, and which one a node gets when it names
// none. Conductors register these as conductor_hardware_interfaces rows;
// the API service reads the rows of the live ones to fill in and check a
// node's interfaces without loading any driver code.
package hwcatalog

import (
	"slices"
	"strings"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// InterfaceType names a kind of driver interface; the value is the prefix of
// the node's "<type>_interface" field.
type InterfaceType string

const (
	Bios       InterfaceType = "bios"
	Boot       InterfaceType = "boot"
	Console    InterfaceType = "console"
	Deploy     InterfaceType = "deploy"
	Inspect    InterfaceType = "inspect"
	Management InterfaceType = "management"
	Network    InterfaceType = "network"
	Power      InterfaceType = "power"
	RAID       InterfaceType = "raid"
	Rescue     InterfaceType = "rescue"
	Storage    InterfaceType = "storage"
	Vendor     InterfaceType = "vendor"
)

// InterfaceTypes lists every interface type in the order validation reports
// them.
var InterfaceTypes = []InterfaceType{Bios, Boot, Console, Deploy, Inspect, Management,
	Network, Power, RAID, Rescue, Storage, Vendor}

// Field points at the node field naming the implementation of it.
func Field(node *model.Node, it InterfaceType) **string {
	switch it {
	case Bios:
		return &node.BIOSInterface
	case Boot:
		return &node.BootInterface
	case Console:
		return &node.ConsoleInterface
	case Deploy:
		return &node.DeployInterface
	case Inspect:
		return &node.InspectInterface
	case Management:
		return &node.ManagementInterface
	case Network:
		return &node.NetworkInterface
	case Power:
		return &node.PowerInterface
	case RAID:
		return &node.RAIDInterface
	case Rescue:
		return &node.RescueInterface
	case Storage:
		return &node.StorageInterface
	case Vendor:
		return &node.VendorInterface
	}
	panic("hwcatalog: unknown interface type " + string(it))
}

// hardwareType is one hardware type's implementations per interface type,
// the default first.
type hardwareType map[InterfaceType][]string

// Catalog is what a set of conductors offers. The zero value offers
// nothing.
type Catalog struct {
	types map[string]hardwareType
	names []string
}

// New builds a catalog from registered rows, in their order. Rows of
// several conductors merge: an implementation any of them enables is
// enabled, and the first row marked default of each interface type is its
// default (else its first implementation).
func New(rows []model.ConductorHardwareInterface) *Catalog {
	c := &Catalog{types: map[string]hardwareType{}}
	defaults := map[[2]string]string{}
	for _, r := range rows {
		hw, ok := c.types[r.HardwareType]
		if !ok {
			hw = hardwareType{}
			c.types[r.HardwareType] = hw
			c.names = append(c.names, r.HardwareType)
		}
		it := InterfaceType(r.InterfaceType)
		if !slices.Contains(hw[it], r.InterfaceName) {
			hw[it] = append(hw[it], r.InterfaceName)
		}
		key := [2]string{r.HardwareType, r.InterfaceType}
		if _, seen := defaults[key]; r.Default && !seen {
			defaults[key] = r.InterfaceName
		}
	}
	for key, name := range defaults {
		impls := c.types[key[0]][InterfaceType(key[1])]
		i := slices.Index(impls, name)
		copy(impls[1:i+1], impls[:i])
		impls[0] = name
	}
	slices.Sort(c.names)
	return c
}

// Rows lists one row per enabled implementation, the default of each
// interface type first: what a conductor registers. ConductorID is left
// for the repository to fill.
func (c *Catalog) Rows() []model.ConductorHardwareInterface {
	var rows []model.ConductorHardwareInterface
	for _, name := range c.names {
		for _, it := range InterfaceTypes {
			for i, impl := range c.types[name][it] {
				rows = append(rows, model.ConductorHardwareInterface{
					HardwareType: name, InterfaceType: string(it), InterfaceName: impl, Default: i == 0,
				})
			}
		}
	}
	return rows
}

// HardwareTypes lists the hardware type names, sorted.
func (c *Catalog) HardwareTypes() []string { return slices.Clone(c.names) }

func (c *Catalog) hardwareType(name string) (hardwareType, error) {
	hw, ok := c.types[name]
	if !ok {
		return nil, errs.DriverNotFound(name)
	}
	return hw, nil
}

// Enabled lists the implementation names of one interface type for a
// hardware type, the default first.
func (c *Catalog) Enabled(hwType string, it InterfaceType) ([]string, error) {
	hw, err := c.hardwareType(hwType)
	if err != nil {
		return nil, err
	}
	return slices.Clone(hw[it]), nil
}

// Defaults maps every interface type hwType offers to the implementation
// a node of hwType uses when it names none.
func (c *Catalog) Defaults(hwType string) (map[InterfaceType]string, error) {
	hw, err := c.hardwareType(hwType)
	if err != nil {
		return nil, err
	}
	out := make(map[InterfaceType]string, len(InterfaceTypes))
	for _, it := range InterfaceTypes {
		if len(hw[it]) > 0 {
			out[it] = hw[it][0]
		}
	}
	return out, nil
}

// Validate checks that node.Driver is offered and that every interface
// the node names is an implementation of that hardware type. Unset
// interfaces are fine: they resolve to the defaults.
func (c *Catalog) Validate(node *model.Node) error {
	hw, err := c.hardwareType(node.Driver)
	if err != nil {
		return err
	}
	for _, it := range InterfaceTypes {
		name := *Field(node, it)
		if name != nil && !slices.Contains(hw[it], *name) {
			return errs.InvalidParameterValue("Interface %q is not a valid %s interface for hardware type %q. Valid %s interfaces are: %s.",
				*name, it, node.Driver, it, strings.Join(hw[it], ", "))
		}
	}
	return nil
}

// Resolve validates the node's interfaces and fills every unset one with
// the hardware type's default, as node create and a driver change with
// reset_interfaces do.
func (c *Catalog) Resolve(node *model.Node) error {
	if err := c.Validate(node); err != nil {
		return err
	}
	hw := c.types[node.Driver]
	for _, it := range InterfaceTypes {
		if field := Field(node, it); *field == nil && len(hw[it]) > 0 {
			name := hw[it][0]
			*field = &name
		}
	}
	return nil
}
