package driver

import "github.com/ferricbm/ferric/pkg/hwcatalog"

// Lookup returns the node's implementation of interface type it as the
// capability T when it has that capability. Optional interface types
// (RAID, console, rescue, BIOS, network, vendor) and optional extras of
// the mandatory ones (clean steps, heartbeats, NMI) are all reached this
// way, so what a hardware type may leave out is visible at the call.
func Lookup[T any](d *Driver, it hwcatalog.InterfaceType) (T, bool) {
	v, ok := d.impls[it].(T)
	return v, ok
}

// Require is Lookup for a call that cannot go on without T: a hardware
// type lacking it answers UnsupportedDriverExtension.
func Require[T any](d *Driver, it hwcatalog.InterfaceType) (T, error) {
	return require[T](d.impls[it], d.HardwareType, it)
}

// RequireDefault is Require for a driver-level call (no node), which the
// hardware type's default implementation of it serves.
func RequireDefault[T any](r *Registry, hwType string, it hwcatalog.InterfaceType) (T, error) {
	impl, err := r.DefaultInterface(hwType, it)
	if err != nil {
		var zero T
		return zero, err
	}
	return require[T](impl, hwType, it)
}

func require[T any](impl Interface, hwType string, it hwcatalog.InterfaceType) (T, error) {
	v, ok := impl.(T)
	if !ok {
		return v, Unsupported(hwType, string(it))
	}
	return v, nil
}

// RequireFor is Require on the driver of the node t acts on; it returns
// that driver too, for the mandatory interfaces beside T.
func RequireFor[T any](t TaskContext, it hwcatalog.InterfaceType) (*Driver, T, error) {
	d, err := t.Driver()
	if err != nil {
		var zero T
		return nil, zero, err
	}
	v, err := Require[T](d, it)
	return d, v, err
}
