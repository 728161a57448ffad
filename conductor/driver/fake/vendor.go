package fake

import (
	"context"
	"slices"

	"github.com/ferricbm/ferric/conductor/driver"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// OpVendorCall is a node vendor passthru call, for fault injection.
const OpVendorCall Op = "vendor.call"

// VendorCall is a driver vendor passthru call the fleet received.
type VendorCall struct {
	Method string
	Info   map[string]any
}

// DriverVendorCalls lists the driver-level vendor calls received so far.
func (h *Hardware) DriverVendorCalls() []VendorCall {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	return slices.Clone(h.rec.driverCalls)
}

// Vendor method names of the fake vendor interface.
const (
	// VendorEcho (node and driver, sync) returns the body it was sent.
	VendorEcho = "echo"
	// VendorRecord (node, async, exclusive) stores the body in the node's
	// driver_internal_info under "fake_vendor_record"; as a driver method
	// it is recorded in the fleet (DriverVendorCalls).
	VendorRecord = "record"
)

type vendor struct{ h *Hardware }

func (v *vendor) Validate(context.Context, driver.TaskContext) error { return nil }

func (v *vendor) Methods() map[string]driver.VendorMethod {
	return map[string]driver.VendorMethod{
		VendorEcho: {HTTPMethods: []string{"GET", "POST", "PUT"}, Description: "Returns the request body."},
		VendorRecord: {HTTPMethods: []string{"POST"}, Async: true, RequireExclusiveLock: true,
			Description: "Stores the request body in the node's driver_internal_info."},
	}
}

func (v *vendor) DriverMethods() map[string]driver.VendorMethod {
	return map[string]driver.VendorMethod{
		VendorEcho:   {HTTPMethods: []string{"GET", "POST", "PUT"}, Description: "Returns the request body."},
		VendorRecord: {HTTPMethods: []string{"POST"}, Async: true, Description: "Records the call in the fake fleet."},
	}
}

func (v *vendor) Call(ctx context.Context, t driver.TaskContext, method, _ string, info map[string]any) (any, error) {
	if err := v.h.fault(ctx, t, OpVendorCall); err != nil {
		return nil, err
	}
	switch method {
	case VendorEcho:
		return info, nil
	case VendorRecord:
		n := t.Node()
		if n.DriverInternalInfo == nil {
			n.DriverInternalInfo = model.JSONObject{}
		}
		n.DriverInternalInfo["fake_vendor_record"] = info
		return nil, nil
	}
	return nil, errs.InvalidParameterValue("No handler for method %s", method)
}

func (v *vendor) CallDriver(_ context.Context, method, _ string, info map[string]any) (any, error) {
	switch method {
	case VendorEcho:
		return info, nil
	case VendorRecord:
		v.h.rec.mu.Lock()
		defer v.h.rec.mu.Unlock()
		v.h.rec.driverCalls = append(v.h.rec.driverCalls, VendorCall{Method: method, Info: info})
		return nil, nil
	}
	return nil, errs.InvalidParameterValue("No handler for method %s", method)
}
