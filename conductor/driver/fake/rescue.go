package fake

import (
	"context"

	"github.com/ferricbm/ferric/conductor/driver"
)

// Operations of the rescue interface faults can be injected into.
const (
	OpRescue   Op = "rescue.rescue"
	OpUnrescue Op = "rescue.unrescue"
)

// rescue boots the rescue system at once: no ramdisk has to call back.
type rescue struct{ h *Hardware }

func (r *rescue) Validate(context.Context, driver.TaskContext) error { return nil }

func (r *rescue) Rescue(ctx context.Context, t driver.TaskContext, _ string) (driver.Result, error) {
	if err := r.h.fault(ctx, t, OpRescue); err != nil {
		return 0, err
	}
	return driver.Done, nil
}

func (r *rescue) Unrescue(ctx context.Context, t driver.TaskContext) (driver.Result, error) {
	if err := r.h.fault(ctx, t, OpUnrescue); err != nil {
		return 0, err
	}
	return driver.Done, nil
}
