package apiservice

import (
	"bytes"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/rpc"
)

func (s *Server) nodeVendorMethods(c echo.Context) error {
	_, methods, err := askNode(s, c, rpc.GetNodeVendorPassthruMethods)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, vendorMethods(methods))
}

func vendorMethods(m map[string]rpc.VendorMethodInfo) map[string]rpc.VendorMethodInfo {
	if m == nil {
		return map[string]rpc.VendorMethodInfo{}
	}
	return m
}

// vendorResult answers a vendor passthru call: 202 for an async method
// (with its return value if it has one), 200 with the value otherwise.
func vendorResult(c echo.Context, res rpc.VendorPassthruResult) error {
	if res.Async {
		if res.Return == nil {
			return c.NoContent(http.StatusAccepted)
		}
		return c.JSON(http.StatusAccepted, res.Return)
	}
	return c.JSON(http.StatusOK, res.Return)
}

// vendorCall reads ?method= and the optional JSON body of a vendor
// passthru call.
func vendorCall(c echo.Context) (string, map[string]any, error) {
	q := c.QueryParams()
	if err := errs.OnlyKeys(q, "method"); err != nil {
		return "", nil, err
	}
	if !q.Has("method") {
		return "", nil, errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: method")
	}
	method := q.Get("method")
	if method == "" {
		return "", nil, errs.InvalidParameterValue("Method not specified")
	}
	if c.Get(keyRamdiskCallback) != nil {
		info, err := readScalars(c)
		return method, info, err
	}
	info, err := readObject(c, true)
	if err != nil {
		return "", nil, err
	}
	return method, info, nil
}

// readScalars reads a ramdisk callback's body, which anyone may send: its
// members are the flat strings and numbers the deploy driver reads, so a
// nested value is refused before it is decoded or forwarded.
func readScalars(c echo.Context) (map[string]any, error) {
	fields, err := readFields(c, true)
	if err != nil {
		return nil, err
	}
	info := make(map[string]any, len(fields))
	for k, raw := range fields {
		if b := bytes.TrimSpace(raw); len(b) > 0 && (b[0] == '{' || b[0] == '[') {
			return nil, errs.InvalidParameterValue("Invalid %s: a ramdisk callback takes strings and numbers only", k)
		}
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, err
		}
		info[k] = v
	}
	return info, nil
}

// nodeVendorPassthru forwards <ANY> /v1/nodes/{n}/vendor_passthru?method=X
// to the node's driver; an async method answers 202, a sync one 200 with
// its return value.
func (s *Server) nodeVendorPassthru(c echo.Context) error {
	method, info, err := vendorCall(c)
	if err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	res, err := rpc.VendorPassthru.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.VendorPassthruArgs{NodeID: n.UUID, Method: method,
		HTTPMethod: c.Request().Method, Info: info})
	if err != nil {
		return err
	}
	return vendorResult(c, res)
}

func (s *Server) driverVendorMethods(c echo.Context) error {
	methods, err := askDriver(s, c, rpc.GetDriverVendorPassthruMethods)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, vendorMethods(methods))
}

// driverVendorPassthru is <ANY> /v1/drivers/{name}/vendor_passthru?method=X.
func (s *Server) driverVendorPassthru(c echo.Context) error {
	method, info, err := vendorCall(c)
	if err != nil {
		return err
	}
	name, api, err := s.driverConductor(c)
	if err != nil {
		return err
	}
	res, err := rpc.DriverVendorPassthru.Call(c.Request().Context(), api, rpc.DriverVendorPassthruArgs{DriverName: name,
		Method: method, HTTPMethod: c.Request().Method, Info: info})
	if err != nil {
		return err
	}
	return vendorResult(c, res)
}
