package driver

import (
	"context"

	"github.com/ferricbm/ferric/pkg/errs"

	"github.com/ferricbm/ferric/pkg/hwcatalog"
)

// Unsupported is the error for an operation the node's driver does not
// offer.
func Unsupported(hwType string, extension string) *errs.Error {
	return errs.New(errs.KindUnsupportedDriverExtension,
		"Driver %s does not support %s (disabled or not implemented).", hwType, extension)
}

// NoOp is the implementation of an optional interface type a hardware type
// does not use (no-bios, no-console, noop network, ...): nothing to check,
// nothing to do.
type NoOp struct{}

func (NoOp) Validate(context.Context, TaskContext) error { return nil }

// NoInspect refuses inspection.
type NoInspect struct{ NoOp }

var _ InspectInterface = NoInspect{}

func (NoInspect) InspectHardware(_ context.Context, t TaskContext) (Result, error) {
	return 0, Unsupported(t.Node().Driver, string(hwcatalog.Inspect))
}
