package conductor

import (
	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/states"
)

// resultEvent is the state-machine event a driver's result fires: drivers
// say what happened, the conductor decides what it means for the node.
func resultEvent(r driver.Result) states.Event {
	if r == driver.Wait {
		return states.EventWait
	}
	return states.EventDone
}

// validationError keeps typed driver validation errors and turns anything
// else into InvalidParameterValue, so the API never answers 500 for a node
// whose driver_info is wrong.
func validationError(err error) error {
	if _, ok := errs.As(err); ok {
		return err
	}
	return errs.InvalidParameterValue("%s", err.Error())
}
