package apiservice

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/metrics"
	"github.com/ferricbm/ferric/pkg/resource/allocations"
	"github.com/ferricbm/ferric/pkg/resource/events"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/portgroups"
)

// routes is every route of the API, grouped as Ironic's API reference groups
// them: method, path, handler, then the gates a request passes first. since(v)
// answers 404 below the microversion that added an endpoint, as if it did
// not exist; noConductorIsBadRequest makes "no conductor serves this node"
// a 400 where Ironic answers so; s.rule names the policy rule the
// request's credentials must pass (403 otherwise), last so that an
// endpoint hidden by its version is a 404 for everyone. It fails when a
// route names a rule the policy does not define.
func (s *Server) routes(e *echo.Echo) error {
	var (
		portgroupAPI  = since(portgroups.Since)
		portgroupSubs = since(portgroups.SubResources)
		ramdiskAPI    = since(microversion.RamdiskAPI)
		vifAPI        = since(microversion.VIFs)
		nmiAPI        = since(microversion.InjectNMI)
		volumeAPI     = since(microversion.VolumeAPI)
		traitsAPI     = traitsSince(microversion.NodeTraits)
		biosAPI       = since(microversion.BIOSAPI)
		conductorsAPI = since(microversion.ConductorsAPI)
		noConductor   = noConductorIsBadRequest
	)
	// Nested collections are read-only: writing to one, or naming one of
	// its members, is a malformed URI.
	nestedWrites := []string{http.MethodPost, http.MethodPatch, http.MethodDelete}
	nestedMember := []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete}

	// API versions.
	e.GET("/", s.getRoot)
	e.HEAD("/", s.getRoot)
	e.GET("/v1", s.getV1)
	e.HEAD("/v1", s.getV1)

	// Health probes (Kubernetes liveness and readiness), outside the API.
	e.GET(healthLive, s.getLive)
	e.GET(healthReady, s.getReady)
	s.metricsRoute(e)

	// Nodes.
	e.GET("/v1/nodes", s.listNodes, s.rule("baremetal:node:list"))
	e.POST("/v1/nodes", s.createNode, s.rule("baremetal:node:create"))
	e.GET("/v1/nodes/detail", s.listNodesDetail, s.rule("baremetal:node:list"))
	e.GET("/v1/nodes/validate", s.validateNodeLegacy, s.rule("baremetal:node:validate"))
	e.GET("/v1/nodes/:node", s.getNode, s.rule("baremetal:node:get"))
	// Which update rules a PATCH must pass depends on the fields it
	// changes (nodeUpdateRules); the route only wants the node visible.
	e.PATCH("/v1/nodes/:node", s.patchNode, noConductor, s.rule("baremetal:node:get"))
	e.DELETE("/v1/nodes/:node", s.deleteNode, noConductor, s.rule("baremetal:node:delete"))

	// Node management.
	e.GET("/v1/nodes/:node/validate", s.validateNode, s.rule("baremetal:node:validate"))
	e.PUT("/v1/nodes/:node/maintenance", s.setMaintenance, noConductor, s.rule("baremetal:node:set_maintenance"))
	e.DELETE("/v1/nodes/:node/maintenance", s.unsetMaintenance, noConductor, s.rule("baremetal:node:clear_maintenance"))
	e.GET("/v1/nodes/:node/management/boot_device", s.getBootDevice, s.rule("baremetal:node:get_boot_device"))
	e.PUT("/v1/nodes/:node/management/boot_device", s.setBootDevice, s.rule("baremetal:node:set_boot_device"))
	e.GET("/v1/nodes/:node/management/boot_device/supported", s.getSupportedBootDevices, s.rule("baremetal:node:get_boot_device"))
	e.PUT("/v1/nodes/:node/management/inject_nmi", s.injectNMI, nmiAPI, s.rule("baremetal:node:inject_nmi"))

	// Node states.
	e.GET("/v1/nodes/:node/states", s.getNodeStates, s.rule("baremetal:node:get_states"))
	e.PUT("/v1/nodes/:node/states/power", s.setPowerState, s.rule("baremetal:node:set_power_state"))
	e.PUT("/v1/nodes/:node/states/provision", s.setProvisionState, s.rule("baremetal:node:set_provision_state"))
	e.PUT("/v1/nodes/:node/states/raid", s.setRAIDConfig, s.rule("baremetal:node:set_raid_state"))
	e.GET("/v1/nodes/:node/states/console", s.getConsole, s.rule("baremetal:node:get_console"))
	e.PUT("/v1/nodes/:node/states/console", s.setConsole, s.rule("baremetal:node:set_console_state"))
	// Ironic's router also reaches a node's console by this older path.
	e.GET("/v1/nodes/states/console/:node", s.getConsole, s.rule("baremetal:node:get_console"))
	e.PUT("/v1/nodes/states/console/:node", s.setConsole, s.rule("baremetal:node:set_console_state"))

	// Node traits.
	e.GET("/v1/nodes/:node/traits", s.listTraits, traitsAPI, s.rule("baremetal:node:traits:list"))
	e.PUT("/v1/nodes/:node/traits", s.setTraits, traitsAPI, s.rule("baremetal:node:traits:set"))
	e.DELETE("/v1/nodes/:node/traits", s.removeTraits, traitsAPI, s.rule("baremetal:node:traits:delete"))
	e.PUT("/v1/nodes/:node/traits/:trait", s.addTrait, traitsAPI, s.rule("baremetal:node:traits:set"))
	e.DELETE("/v1/nodes/:node/traits/:trait", s.removeTrait, traitsAPI, s.rule("baremetal:node:traits:delete"))

	// Node vendor passthru.
	e.Any("/v1/nodes/:node/vendor_passthru", s.nodeVendorPassthru, s.rule("baremetal:node:vendor_passthru"))
	e.GET("/v1/nodes/:node/vendor_passthru/methods", s.nodeVendorMethods, s.rule("baremetal:node:vendor_passthru"))

	// VIFs (virtual interfaces) of a node.
	e.GET("/v1/nodes/:node/vifs", s.listVIFs, noConductor, vifAPI, s.rule("baremetal:node:vif:list"))
	e.POST("/v1/nodes/:node/vifs", s.attachVIF, noConductor, vifAPI, s.rule("baremetal:node:vif:attach"))
	e.DELETE("/v1/nodes/:node/vifs/:vif", s.detachVIF, noConductor, vifAPI, s.rule("baremetal:node:vif:detach"))

	// Ports of a node (read-only).
	e.GET("/v1/nodes/:node/ports", s.listNodePorts, s.rule("baremetal:port:list"))
	e.GET("/v1/nodes/:node/ports/detail", s.listNodePortsDetail, s.rule("baremetal:port:list"))
	e.Match(nestedWrites, "/v1/nodes/:node/ports", malformedURI, s.rule("baremetal:port:list"))
	e.Match(nestedMember, "/v1/nodes/:node/ports/:port", malformedURI, s.rule("baremetal:port:list"))

	// Ports.
	ports := s.portResource()
	e.GET("/v1/ports", s.listPorts, s.rule("baremetal:port:list"))
	e.GET("/v1/ports/detail", s.listPortsDetail, s.rule("baremetal:port:list"))
	e.POST("/v1/ports", createHandler(s, ports), noConductor, s.rule("baremetal:port:create"))
	e.GET("/v1/ports/:port", getHandler(ports), noConductor, s.rule("baremetal:port:get"))
	e.PATCH("/v1/ports/:port", patchHandler(ports), noConductor, s.rule("baremetal:port:update"))
	e.DELETE("/v1/ports/:port", deleteHandler(ports), noConductor, s.rule("baremetal:port:delete"))

	// Drivers.
	e.GET("/v1/drivers", s.listDrivers, s.rule("baremetal:driver:get"))
	e.GET("/v1/drivers/:driver", s.getDriver, s.rule("baremetal:driver:get"))
	e.GET("/v1/drivers/:driver/properties", s.driverProperties, s.rule("baremetal:driver:get_properties"))
	e.GET("/v1/drivers/:driver/raid/logical_disk_properties", s.raidLogicalDiskProperties, s.rule("baremetal:driver:get_raid_logical_disk_properties"))
	e.GET("/v1/drivers/:driver/vendor_passthru/methods", s.driverVendorMethods, s.rule("baremetal:driver:vendor_passthru"))
	e.Any("/v1/drivers/:driver/vendor_passthru", s.driverVendorPassthru, s.rule("baremetal:driver:vendor_passthru"))

	// Volume (1.32).
	connectors, targets := s.volumeResources()
	e.GET("/v1/volume", s.getVolumeRoot, volumeAPI, s.rule("baremetal:volume:get"))
	e.GET("/v1/nodes/:node/volume", s.getNodeVolumeRoot, volumeAPI, s.rule("baremetal:volume:get"))
	e.GET("/v1/volume/connectors", s.listConnectors, volumeAPI, s.rule("baremetal:volume:list"))
	e.GET("/v1/volume/connectors/detail", s.listConnectorsDetail, volumeAPI, s.rule("baremetal:volume:list"))
	e.POST("/v1/volume/connectors", createHandler(s, connectors), noConductor, volumeAPI, s.rule("baremetal:volume:create"))
	e.GET("/v1/volume/connectors/:id", getHandler(connectors), noConductor, volumeAPI, s.rule("baremetal:volume:get"))
	e.PATCH("/v1/volume/connectors/:id", patchHandler(connectors), noConductor, volumeAPI, s.rule("baremetal:volume:update"))
	e.DELETE("/v1/volume/connectors/:id", deleteHandler(connectors), noConductor, volumeAPI, s.rule("baremetal:volume:delete"))
	e.GET("/v1/nodes/:node/volume/connectors", s.listNodeConnectors, volumeAPI, s.rule("baremetal:volume:list"))
	e.GET("/v1/volume/targets", s.listTargets, volumeAPI, s.rule("baremetal:volume:list"))
	e.GET("/v1/volume/targets/detail", s.listTargetsDetail, volumeAPI, s.rule("baremetal:volume:list"))
	e.POST("/v1/volume/targets", createHandler(s, targets), noConductor, volumeAPI, s.rule("baremetal:volume:create"))
	e.GET("/v1/volume/targets/:id", getHandler(targets), noConductor, volumeAPI, s.rule("baremetal:volume:get"))
	e.PATCH("/v1/volume/targets/:id", patchHandler(targets), noConductor, volumeAPI, s.rule("baremetal:volume:update"))
	e.DELETE("/v1/volume/targets/:id", deleteHandler(targets), noConductor, volumeAPI, s.rule("baremetal:volume:delete"))
	e.GET("/v1/nodes/:node/volume/targets", s.listNodeTargets, volumeAPI, s.rule("baremetal:volume:list"))
	e.Match(nestedWrites, "/v1/nodes/:node/volume/connectors", missingVolumeID("connector"), volumeAPI, s.rule("baremetal:volume:get"))
	e.Match(nestedWrites, "/v1/nodes/:node/volume/targets", missingVolumeID("target"), volumeAPI, s.rule("baremetal:volume:get"))
	e.Match(nestedMember, "/v1/nodes/:node/volume/connectors/:id", nodeScoped(connectors), volumeAPI, s.rule("baremetal:volume:get"))
	e.Match(nestedMember, "/v1/nodes/:node/volume/targets/:id", nodeScoped(targets), volumeAPI, s.rule("baremetal:volume:get"))

	// Chassis (written by the API alone: no conductor manages one).
	chassis := s.chassisResource()
	e.GET("/v1/chassis", s.listChassis, s.rule("baremetal:chassis:get"))
	e.GET("/v1/chassis/detail", s.listChassisDetail, s.rule("baremetal:chassis:get"))
	e.POST("/v1/chassis", createHandler(s, chassis), noConductor, s.rule("baremetal:chassis:create"))
	e.GET("/v1/chassis/:chassis", getHandler(chassis), noConductor, s.rule("baremetal:chassis:get"))
	e.PATCH("/v1/chassis/:chassis", patchHandler(chassis), noConductor, s.rule("baremetal:chassis:update"))
	e.DELETE("/v1/chassis/:chassis", deleteHandler(chassis), noConductor, s.rule("baremetal:chassis:delete"))
	e.GET("/v1/chassis/:chassis/nodes", s.listChassisNodes, s.rule("baremetal:node:list"))
	e.GET("/v1/chassis/:chassis/nodes/detail", s.listChassisNodesDetail, s.rule("baremetal:node:list"))
	e.Match(nestedWrites, "/v1/chassis/:chassis/nodes", malformedURI, s.rule("baremetal:node:list"))
	e.Match(nestedMember, "/v1/chassis/:chassis/nodes/:node", malformedURI, s.rule("baremetal:node:list"))

	// Allocations (1.52).
	allocs, nodeAlloc := s.allocationResource(), s.nodeAllocationResource()
	allocationRead := since(allocations.Since)
	allocationWrite := sinceElse405(allocations.Since, "The API version does not allow allocations")
	e.GET("/v1/allocations", s.listAllocations, allocationRead, s.rule("baremetal:allocation:list"))
	e.POST("/v1/allocations", createHandler(s, allocs), allocationWrite, s.rule("baremetal:allocation:create"))
	e.GET("/v1/allocations/:allocation", getHandler(allocs), allocationRead, s.rule("baremetal:allocation:get"))
	e.PATCH("/v1/allocations/:allocation", patchHandler(allocs), allocationWrite,
		sinceElse405(allocations.Updates, "The API version does not allow updating allocations"), s.rule("baremetal:allocation:update"))
	e.DELETE("/v1/allocations/:allocation", deleteHandler(allocs), noConductor, allocationWrite, s.rule("baremetal:allocation:delete"))
	e.GET("/v1/nodes/:node/allocation", getHandler(nodeAlloc), allocationRead, s.rule("baremetal:allocation:get"))
	e.DELETE("/v1/nodes/:node/allocation", deleteHandler(nodeAlloc), noConductor, allocationRead, s.rule("baremetal:allocation:delete"))

	// Port groups (1.23) and their nested collections (1.24).
	pgs := s.portgroupResource()
	e.GET("/v1/portgroups", s.listPortgroups, portgroupAPI, s.rule("baremetal:portgroup:list"))
	e.GET("/v1/portgroups/detail", s.listPortgroupsDetail, portgroupAPI, s.rule("baremetal:portgroup:list"))
	e.POST("/v1/portgroups", createHandler(s, pgs), noConductor, portgroupAPI, s.rule("baremetal:portgroup:create"))
	e.GET("/v1/portgroups/:portgroup", getHandler(pgs), noConductor, portgroupAPI, s.rule("baremetal:portgroup:get"))
	e.PATCH("/v1/portgroups/:portgroup", patchHandler(pgs), noConductor, portgroupAPI, s.rule("baremetal:portgroup:update"))
	e.DELETE("/v1/portgroups/:portgroup", deleteHandler(pgs), noConductor, portgroupAPI, s.rule("baremetal:portgroup:delete"))
	e.GET("/v1/portgroups/:portgroup/ports", s.listPortgroupPorts, portgroupSubs, s.rule("baremetal:port:list"))
	e.GET("/v1/portgroups/:portgroup/ports/detail", s.listPortgroupPortsDetail, portgroupSubs, s.rule("baremetal:port:list"))
	e.GET("/v1/nodes/:node/portgroups", s.listNodePortgroups, portgroupSubs, s.rule("baremetal:portgroup:list"))
	e.GET("/v1/nodes/:node/portgroups/detail", s.listNodePortgroupsDetail, portgroupSubs, s.rule("baremetal:portgroup:list"))
	e.Match(nestedWrites, "/v1/portgroups/:portgroup/ports", malformedURI, portgroupSubs, s.rule("baremetal:portgroup:list"))
	e.Match(nestedWrites, "/v1/nodes/:node/portgroups", malformedURI, portgroupSubs, s.rule("baremetal:portgroup:list"))
	e.Match(nestedMember, "/v1/portgroups/:portgroup/ports/:port", malformedURI, portgroupSubs, s.rule("baremetal:portgroup:list"))
	e.Match(nestedMember, "/v1/nodes/:node/portgroups/:pg", malformedURI, portgroupSubs, s.rule("baremetal:portgroup:list"))

	// Ramdisk (the deploy agent's own endpoints).
	e.GET("/v1/lookup", s.lookup, noConductor, ramdiskAPI, s.rule("baremetal:driver:ipa_lookup"))
	e.POST("/v1/heartbeat/:node", s.heartbeat, noConductor, ramdiskAPI, s.rule("baremetal:node:ipa_heartbeat"))

	// Node BIOS settings.
	e.GET("/v1/nodes/:node/bios", s.listBIOS, biosAPI, s.rule("baremetal:node:bios:get"))
	e.GET("/v1/nodes/:node/bios/:setting", s.getBIOS, biosAPI, s.rule("baremetal:node:bios:get"))

	// External events (1.54).
	e.POST("/v1/events", s.postEvents, since(events.Since), s.rule("baremetal:events:post"))

	// Conductors.
	e.GET("/v1/conductors", s.listConductors, conductorsAPI, s.rule("baremetal:conductor:get"))
	e.GET("/v1/conductors/:hostname", s.getConductor, conductorsAPI, s.rule("baremetal:conductor:get"))

	if len(s.unknownRules) > 0 {
		return fmt.Errorf("routes name undefined policy rules %v", s.unknownRules)
	}
	return nil
}

// since hides an endpoint below version v, as if the route did not exist.
func since(v microversion.Version) echo.MiddlewareFunc {
	return func(h echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !version(c).AtLeast(v) {
				return errs.New(errs.KindNotFound, "The API is not supported for this version")
			}
			return h(c)
		}
	}
}

// traitsSince answers the traits endpoints below version v as Ironic's
// routing did before they existed: a read is 406, a write 405.
func traitsSince(v microversion.Version) echo.MiddlewareFunc {
	return func(h echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			switch {
			case version(c).AtLeast(v):
				return h(c)
			case c.Request().Method == http.MethodGet:
				return errs.NotAcceptable("")
			default:
				return &routingError{code: http.StatusMethodNotAllowed, description: "The method is not allowed for the requested URL."}
			}
		}
	}
}

// sinceElse405 refuses a write endpoint below version v with 405, where
// Ironic's routing answers a read of the same path with 404 (since).
func sinceElse405(v microversion.Version, description string) echo.MiddlewareFunc {
	return func(h echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !version(c).AtLeast(v) {
				return &routingError{code: http.StatusMethodNotAllowed, description: description}
			}
			return h(c)
		}
	}
}

// knownMethod answers 405 to a method the API serves on no route before
// any other work: its name is client-chosen text of any length.
func knownMethod(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !metrics.KnownMethod(c.Request().Method) {
			return &routingError{code: http.StatusMethodNotAllowed, description: "The method is not allowed for the requested URL."}
		}
		return next(c)
	}
}

// normalizePath routes paths without the /v1 prefix as if it were there
// (bookmark links omit it) and ignores a trailing slash.
func normalizePath(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		u := c.Request().URL
		u.Path = normalize(u.Path)
		if u.RawPath != "" {
			u.RawPath = normalize(u.RawPath)
		}
		return next(c)
	}
}

func normalize(p string) string {
	if len(p) > 1 {
		p = strings.TrimRight(p, "/")
		if p == "" {
			p = "/"
		}
	}
	if p != "/" && p != "/v1" && !strings.HasPrefix(p, "/v1/") && !isHealthProbe(p) && p != metricsPath {
		p = "/v1" + p
	}
	return p
}
