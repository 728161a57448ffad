package apiservice

import (
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/rpc"
)

var driverListParams = map[string]microversion.Version{
	"type": microversion.V1(30), "detail": microversion.V1(30), "fields": microversion.V1(77),
}

func (s *Server) driverHosts(c echo.Context) (map[string][]string, error) {
	return s.store.HardwareTypeHosts(c.Request().Context(), s.cfg.Conductor.HeartbeatTimeout)
}

// renderDriver is a hardware type as listed, or, given the catalog of what
// the conductors offer, its default and enabled interfaces too (1.30).
func (s *Server) renderDriver(c echo.Context, name string, hosts []string, detail *hwcatalog.Catalog) map[string]any {
	base := s.baseURL(c)
	sorted := append([]string{}, hosts...)
	sort.Strings(sorted)
	out := map[string]any{
		"name":  name,
		"hosts": sorted,
		"links": present.Links(base, "drivers/"+name),
	}
	if version(c).AtLeast(microversion.StatesLink) {
		out["properties"] = present.Links(base, "drivers/"+name+"/properties")
	}
	if version(c).AtLeast(microversion.DriverDetails) {
		out["type"] = "dynamic"
		if detail != nil {
			addDriverDetail(c, out, name, detail)
		}
	}
	return out
}

func (s *Server) listDrivers(c echo.Context) error {
	q := c.QueryParams()
	if err := errs.OnlyKeys(q, "type", "detail", "fields"); err != nil {
		return err
	}
	for k, since := range driverListParams {
		if q.Has(k) {
			if err := microversion.RequireAtLeast(version(c), since); err != nil {
				return err
			}
		}
	}
	detail, err := query.Bool(q, "detail")
	if err != nil {
		return err
	}
	// Every hardware type is "dynamic"; classic drivers are long gone.
	switch q.Get("type") {
	case "", "dynamic":
	case "classic":
		return c.JSON(http.StatusOK, map[string]any{"drivers": []any{}})
	default:
		return errs.InvalidParameterValue("Invalid type %s: acceptable values are 'classic' and 'dynamic'", q.Get("type"))
	}
	hosts, err := s.driverHosts(c)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(hosts))
	for n := range hosts {
		names = append(names, n)
	}
	sort.Strings(names)
	var catalog *hwcatalog.Catalog
	if detail != nil && *detail {
		if catalog, err = s.catalog(c.Request().Context()); err != nil {
			return err
		}
	}
	out := make([]map[string]any, 0, len(names))
	for _, n := range names {
		out = append(out, s.renderDriver(c, n, hosts[n], catalog))
	}
	return c.JSON(http.StatusOK, map[string]any{"drivers": out})
}

func (s *Server) findDriver(c echo.Context) (string, []string, error) {
	name := c.Param("driver")
	hosts, err := s.driverHosts(c)
	if err != nil {
		return "", nil, err
	}
	h, ok := hosts[name]
	if !ok || len(h) == 0 {
		return "", nil, errs.DriverNotFound(name)
	}
	return name, h, nil
}

func (s *Server) getDriver(c echo.Context) error {
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return err
	}
	name, hosts, err := s.findDriver(c)
	if err != nil {
		return err
	}
	catalog, err := s.catalog(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.renderDriver(c, name, hosts, catalog))
}

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

// askDriver sends a conductor serving the hardware type named by the path
// one method, for a GET that takes no query parameters.
func askDriver[R any](s *Server, c echo.Context, m rpc.Method[rpc.DriverArgs, R]) (R, error) {
	var none R
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return none, err
	}
	name, api, err := s.driverConductor(c)
	if err != nil {
		return none, err
	}
	return m.Call(c.Request().Context(), api, rpc.DriverArgs{DriverName: name})
}

// driverProperties is GET /v1/drivers/{name}/properties.
func (s *Server) driverProperties(c echo.Context) error {
	props, err := askDriver(s, c, rpc.GetDriverProperties)
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
