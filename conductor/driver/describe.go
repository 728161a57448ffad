package driver

import (
	"maps"

	"github.com/ferricbm/ferric/pkg/hwcatalog"
)

// DefaultInterface is the implementation of it a node of hwType gets when
// it names none; driver-level calls (vendor passthru, RAID logical disk
// properties) go to it.
func (r *Registry) DefaultInterface(hwType string, it hwcatalog.InterfaceType) (Interface, error) {
	hw, err := r.hardwareType(hwType)
	if err != nil {
		return nil, err
	}
	return hw.Interfaces[it][0].Impl, nil
}

// Properties describes the node properties and driver_info keys the
// default interfaces of hwType read.
func (r *Registry) Properties(hwType string) (map[string]string, error) {
	hw, err := r.hardwareType(hwType)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, it := range hwcatalog.InterfaceTypes {
		if d, ok := hw.Interfaces[it][0].Impl.(PropertyDescriber); ok {
			maps.Copy(out, d.Properties())
		}
	}
	return out, nil
}
