package apiservice

import (
	"context"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/nodes"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

// extensionRoutes are the RAID, console, NMI, vendor method discovery,
// driver detail, agent (lookup/heartbeat) and VIF endpoints.
func (s *Server) extensionRoutes(e *echo.Echo) {
	e.PUT("/v1/nodes/:node/states/raid", s.setRAIDConfig)
	e.GET("/v1/nodes/:node/states/console", s.getConsole)
	e.PUT("/v1/nodes/:node/states/console", s.setConsole)
	e.PUT("/v1/nodes/:node/management/inject_nmi", s.injectNMI)
	e.GET("/v1/nodes/:node/vendor_passthru/methods", s.nodeVendorMethods)
	e.GET("/v1/nodes/:node/vifs", s.listVIFs, noConductorIsBadRequest)
	e.POST("/v1/nodes/:node/vifs", s.attachVIF, noConductorIsBadRequest)
	e.DELETE("/v1/nodes/:node/vifs/:vif", s.detachVIF, noConductorIsBadRequest)

	e.GET("/v1/drivers/:driver/properties", s.driverProperties)
	e.GET("/v1/drivers/:driver/raid/logical_disk_properties", s.raidLogicalDiskProperties)
	e.GET("/v1/drivers/:driver/vendor_passthru/methods", s.driverVendorMethods)
	e.Any("/v1/drivers/:driver/vendor_passthru", s.driverVendorPassthru)

	e.GET("/v1/lookup", s.lookup, noConductorIsBadRequest)
	e.POST("/v1/heartbeat/:node", s.heartbeat, noConductorIsBadRequest)
}

// requireEndpoint hides an endpoint below the version that added it.
func requireEndpoint(c echo.Context, since microversion.Version) error {
	if !version(c).AtLeast(since) {
		return errs.New(errs.KindNotFound, "The API is not supported for this version")
	}
	return nil
}

// onlyKeys refuses body keys outside allowed.
func onlyKeys(body map[string]any, allowed ...string) error {
	var bad []string
	for k := range body {
		if !slices.Contains(allowed, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errs.New(errs.KindInvalid, "Unexpected arguments: %s", strings.Join(bad, ", "))
	}
	return nil
}

// checkInterfaceChange validates interface names a PATCH changed on a node
// keeping its driver, so a typo is a 400 here rather than at the conductor.
// A hardware type no live conductor offers is left to the conductor.
func (s *Server) checkInterfaceChange(ctx context.Context, before, after *model.Node) error {
	for _, it := range hwcatalog.InterfaceTypes {
		if !reflect.DeepEqual(*hwcatalog.Field(before, it), *hwcatalog.Field(after, it)) {
			catalog, err := s.catalog(ctx)
			if err != nil {
				return err
			}
			if err := catalog.Validate(after); err != nil && !errs.Is(err, errs.KindDriverNotFound) {
				return err
			}
			return nil
		}
	}
	return nil
}

// raidNotFound re-codes "this driver has no RAID" as 404: RAID is optional
// and most hardware types lack it (docs/api.md §5.4).
func raidNotFound(err error) error {
	if e, ok := errs.As(err); ok && e.Kind == errs.KindUnsupportedDriverExtension {
		return e.WithStatus(http.StatusNotFound)
	}
	return err
}

// setRAIDConfig is PUT .../states/raid: the body is the whole target RAID
// configuration.
func (s *Server) setRAIDConfig(c echo.Context) error {
	if err := microversion.RequireAtLeast(version(c), microversion.RAIDConfig); err != nil {
		return err
	}
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.SetTargetRAIDConfig.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.SetTargetRAIDConfigArgs{NodeID: n.UUID, Config: body}); err != nil {
		return raidNotFound(err)
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) getConsole(c echo.Context) error {
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	off := map[string]any{"console_enabled": false, "console_info": nil}
	if !n.ConsoleEnabled {
		return c.JSON(http.StatusOK, off)
	}
	ctx := c.Request().Context()
	info, err := rpc.GetConsoleInformation.Call(ctx, s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
	if errs.Is(err, errs.KindInvalid) {
		// Stopped since the node was read.
		return c.JSON(http.StatusOK, off)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"console_enabled": true, "console_info": info})
}

func (s *Server) setConsole(c echo.Context) error {
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	if err := onlyKeys(body, "enabled"); err != nil {
		return err
	}
	raw, ok := body["enabled"]
	if !ok || raw == nil {
		return errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: enabled")
	}
	enabled, err := nodes.AsBool("enabled", raw)
	if err != nil {
		return errs.InvalidParameterValue("Invalid enabled: expected a boolean")
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.SetConsoleMode.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.SetConsoleModeArgs{NodeID: n.UUID, Enabled: enabled}); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, s.statesLocation(c)+"/console")
	return c.NoContent(http.StatusAccepted)
}

func (s *Server) injectNMI(c echo.Context) error {
	if err := requireEndpoint(c, microversion.InjectNMI); err != nil {
		return err
	}
	body, err := readObject(c, true)
	if err != nil {
		return err
	}
	if err := onlyKeys(body); err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.InjectNMI.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) nodeVendorMethods(c echo.Context) error {
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	methods, err := rpc.GetNodeVendorPassthruMethods.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
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
	if err := query.Check(q, "method"); err != nil {
		return "", nil, err
	}
	if !q.Has("method") {
		return "", nil, errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: method")
	}
	method := q.Get("method")
	if method == "" {
		return "", nil, errs.InvalidParameterValue("Method not specified")
	}
	info, err := readObject(c, true)
	if err != nil {
		return "", nil, err
	}
	return method, info, nil
}

// vifNode is the node of a VIF call.
func (s *Server) vifNode(c echo.Context) (*model.Node, error) {
	if err := requireEndpoint(c, microversion.VIFs); err != nil {
		return nil, err
	}
	return s.findNode(c, c.Param("node"))
}

func (s *Server) listVIFs(c echo.Context) error {
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	n, err := s.vifNode(c)
	if err != nil {
		return err
	}
	vifs, err := rpc.VIFList.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
	if err != nil {
		return err
	}
	if vifs == nil {
		vifs = []rpc.VIF{}
	}
	return c.JSON(http.StatusOK, map[string]any{"vifs": vifs})
}

func (s *Server) attachVIF(c echo.Context) error {
	if err := requireEndpoint(c, microversion.VIFs); err != nil {
		return err
	}
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	if err := onlyKeys(body, "id"); err != nil {
		return err
	}
	raw, ok := body["id"]
	if !ok {
		return errs.New(errs.KindInvalid, "Schema error for vif: 'id' is a required property")
	}
	id, ok := raw.(string)
	if !ok || id == "" {
		return errs.InvalidParameterValue("Invalid VIF id: expected a non-empty string")
	}
	n, err := s.vifNode(c)
	if err != nil {
		return err
	}
	if err := rpc.VIFAttach.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: id}}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) detachVIF(c echo.Context) error {
	n, err := s.vifNode(c)
	if err != nil {
		return err
	}
	if err := rpc.VIFDetach.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.VIFDetachArgs{NodeID: n.UUID, VIFID: c.Param("vif")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
