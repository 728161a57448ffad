package rpc

type VendorPassthruArgs struct {
	NodeID     string         `json:"node_id"`
	Method     string         `json:"driver_method"`
	HTTPMethod string         `json:"http_method"`
	Info       map[string]any `json:"info"`
}

type VendorPassthruResult struct {
	Return any  `json:"return"`
	Async  bool `json:"async"`
	Attach bool `json:"attach"`
}

// DriverArgs names a hardware type.
type DriverArgs struct {
	DriverName string `json:"driver_name"`
}

// VendorMethodInfo describes a vendor passthru method as
// GET .../vendor_passthru/methods shows it. RequireExclusiveLock is only
// set for node methods.
type VendorMethodInfo struct {
	HTTPMethods          []string `json:"http_methods"`
	Async                bool     `json:"async"`
	Description          string   `json:"description"`
	Attach               bool     `json:"attach"`
	RequireExclusiveLock *bool    `json:"require_exclusive_lock,omitempty"`
}

type DriverVendorPassthruArgs struct {
	DriverName string         `json:"driver_name"`
	Method     string         `json:"driver_method"`
	HTTPMethod string         `json:"http_method"`
	Info       map[string]any `json:"info"`
}
