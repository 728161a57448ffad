package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/rpc"
)

// driverInterfaceKinds are the interface kinds a driver's detail shows
// default_<kind>_interface / enabled_<kind>_interfaces for, and the version
// each kind became visible in (docs/api.md §4.6).
var driverInterfaceKinds = []struct {
	kind  hwcatalog.InterfaceType
	since microversion.Version
}{
	{hwcatalog.Bios, microversion.V1(40)}, {hwcatalog.Boot, microversion.DriverDetails},
	{hwcatalog.Console, microversion.DriverDetails}, {hwcatalog.Deploy, microversion.DriverDetails},
	{hwcatalog.Inspect, microversion.DriverDetails}, {hwcatalog.Management, microversion.DriverDetails},
	{hwcatalog.Network, microversion.DriverDetails}, {hwcatalog.Power, microversion.DriverDetails},
	{hwcatalog.RAID, microversion.DriverDetails}, {hwcatalog.Rescue, microversion.RescueVerbs},
	{hwcatalog.Storage, microversion.StorageInterface}, {hwcatalog.Vendor, microversion.DriverDetails},
}

// addDriverDetail adds the default and enabled implementations of every
// interface kind visible at the request's version, as the live conductors
// registered them in catalog.
func addDriverDetail(c echo.Context, out map[string]any, name string, catalog *hwcatalog.Catalog) {
	v := version(c)
	defaults, err := catalog.Defaults(name)
	known := err == nil
	for _, k := range driverInterfaceKinds {
		if !v.AtLeast(k.since) {
			continue
		}
		var def any
		enabled := []string{}
		if known {
			def = defaults[k.kind]
			enabled, _ = catalog.Enabled(name, k.kind)
		}
		out["default_"+string(k.kind)+"_interface"] = def
		out["enabled_"+string(k.kind)+"_interfaces"] = enabled
	}
}

// driverProperties is GET /v1/drivers/{name}/properties.
func (s *Server) driverProperties(c echo.Context) error {
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	name, api, err := s.driverConductor(c)
	if err != nil {
		return err
	}
	props, err := rpc.GetDriverProperties.Call(c.Request().Context(), api, rpc.DriverArgs{DriverName: name})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, props)
}

// driverConductor picks a conductor serving the hardware type for
// driver-level calls: the first by name, so repeated calls go to the same
// one.
func (s *Server) driverConductor(c echo.Context) (string, rpc.Endpoint, error) {
	name, hosts, err := s.findDriver(c)
	if err != nil {
		return "", rpc.Endpoint{}, err
	}
	first := hosts[0]
	for _, h := range hosts {
		if h < first {
			first = h
		}
	}
	return name, s.rpc.Conductor(first), nil
}

// raidLogicalDiskProperties is GET /v1/drivers/{name}/raid/logical_disk_properties.
func (s *Server) raidLogicalDiskProperties(c echo.Context) error {
	if err := microversion.RequireAtLeast(version(c), microversion.RAIDConfig); err != nil {
		return err
	}
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	name, api, err := s.driverConductor(c)
	if err != nil {
		return err
	}
	props, err := rpc.GetRAIDLogicalDiskProperties.Call(c.Request().Context(), api, rpc.DriverArgs{DriverName: name})
	if err != nil {
		return raidNotFound(err)
	}
	return c.JSON(http.StatusOK, props)
}

func (s *Server) driverVendorMethods(c echo.Context) error {
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	name, api, err := s.driverConductor(c)
	if err != nil {
		return err
	}
	methods, err := rpc.GetDriverVendorPassthruMethods.Call(c.Request().Context(), api, rpc.DriverArgs{DriverName: name})
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
