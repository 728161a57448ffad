package apiservice

import (
	"net/http"
	"sort"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
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
	if err := query.Check(q, "type", "detail", "fields"); err != nil {
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
	if err := query.Check(c.QueryParams()); err != nil {
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
