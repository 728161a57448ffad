package driver

import (
	"context"
	"slices"

	"github.com/ferricbm/ferric/pkg/hwcatalog"
)

// VendorCallValidator is implemented by vendor interfaces that check a
// method's arguments before the conductor answers: an asynchronous method
// (a ramdisk callback) must refuse bad input synchronously, with a 4xx and
// no change, instead of failing later in a worker nobody waits for. The
// conductor calls it under the node lock when the method takes one.
type VendorCallValidator interface {
	ValidateCall(ctx context.Context, t TaskContext, method, httpMethod string, info map[string]any) error
}

// VendorLockedCaller is a vendor interface that must see a call for a
// method needing the lock even while another task holds it: a ramdisk
// callback repeated during the deploy the first one started is an attack
// to stop, not a call to retry later. The conductor calls it, with the
// node read under a shared lock, instead of answering NodeLocked; a nil
// error lets the NodeLocked answer go out.
type VendorLockedCaller interface {
	CallWhileLocked(ctx context.Context, t TaskContext, method string, info map[string]any) error
}

// Service is implemented by interface implementations that run something
// inside the conductor process while it is up, such as the boot file
// server of the pxe interface. The conductor starts each enabled one once.
type Service interface {
	StartService(ctx context.Context) error
	StopService(ctx context.Context) error
}

// Services lists the distinct implementations of the enabled hardware types
// that are Services, in a stable order.
func (r *Registry) Services() []Service {
	var out []Service
	for _, name := range r.names {
		for _, it := range hwcatalog.InterfaceTypes {
			for _, impl := range r.types[name].Interfaces[it] {
				s, ok := impl.Impl.(Service)
				if ok && !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	return out
}
