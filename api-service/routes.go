package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/portgroups"
	"github.com/ferricbm/ferric/pkg/errs"
)

// routes is every route of the API, grouped as Ironic's API reference groups
// them: method, path, handler, then the gates a request passes first. since(v)
// answers 404 below the microversion that added an endpoint, as if it did
// not exist; noConductorIsBadRequest makes "no conductor serves this node"
// a 400 where Ironic answers so.
func (s *Server) routes(e *echo.Echo) {
	var (
		portgroupAPI  = since(portgroups.Since)
		portgroupSubs = since(portgroups.SubResources)
		ramdiskAPI    = since(microversion.RamdiskAPI)
		vifAPI        = since(microversion.VIFs)
		nmiAPI        = since(microversion.InjectNMI)
		volumeAPI     = since(microversion.VolumeAPI)
		traitsAPI     = since(microversion.NodeTraits)
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

	// Nodes.
	e.GET("/v1/nodes", s.listNodes)
	e.POST("/v1/nodes", s.createNode)
	e.GET("/v1/nodes/detail", s.listNodesDetail)
	e.GET("/v1/nodes/validate", s.validateNodeLegacy)
	e.GET("/v1/nodes/:node", s.getNode)
	e.PATCH("/v1/nodes/:node", s.patchNode, noConductor)
	e.DELETE("/v1/nodes/:node", s.deleteNode, noConductor)

	// Node management.
	e.GET("/v1/nodes/:node/validate", s.validateNode)
	e.PUT("/v1/nodes/:node/maintenance", s.setMaintenance, noConductor)
	e.DELETE("/v1/nodes/:node/maintenance", s.unsetMaintenance, noConductor)
	e.GET("/v1/nodes/:node/management/boot_device", s.getBootDevice)
	e.PUT("/v1/nodes/:node/management/boot_device", s.setBootDevice)
	e.GET("/v1/nodes/:node/management/boot_device/supported", s.getSupportedBootDevices)
	e.PUT("/v1/nodes/:node/management/inject_nmi", s.injectNMI, nmiAPI)

	// Node states.
	e.GET("/v1/nodes/:node/states", s.getNodeStates)
	e.PUT("/v1/nodes/:node/states/power", s.setPowerState)
	e.PUT("/v1/nodes/:node/states/provision", s.setProvisionState)
	e.PUT("/v1/nodes/:node/states/raid", s.setRAIDConfig)
	e.GET("/v1/nodes/:node/states/console", s.getConsole)
	e.PUT("/v1/nodes/:node/states/console", s.setConsole)

	// Node traits.
	e.GET("/v1/nodes/:node/traits", s.listTraits, traitsAPI)
	e.PUT("/v1/nodes/:node/traits", s.setTraits, traitsAPI)
	e.DELETE("/v1/nodes/:node/traits", s.removeTraits, traitsAPI)
	e.PUT("/v1/nodes/:node/traits/:trait", s.addTrait, traitsAPI)
	e.DELETE("/v1/nodes/:node/traits/:trait", s.removeTrait, traitsAPI)

	// Node vendor passthru.
	e.Any("/v1/nodes/:node/vendor_passthru", s.nodeVendorPassthru)
	e.GET("/v1/nodes/:node/vendor_passthru/methods", s.nodeVendorMethods)

	// VIFs (virtual interfaces) of a node.
	e.GET("/v1/nodes/:node/vifs", s.listVIFs, noConductor, vifAPI)
	e.POST("/v1/nodes/:node/vifs", s.attachVIF, noConductor, vifAPI)
	e.DELETE("/v1/nodes/:node/vifs/:vif", s.detachVIF, noConductor, vifAPI)

	// Ports of a node (read-only).
	e.GET("/v1/nodes/:node/ports", s.listNodePorts)
	e.GET("/v1/nodes/:node/ports/detail", s.listNodePortsDetail)
	e.Match(nestedWrites, "/v1/nodes/:node/ports", malformedURI)
	e.Match(nestedMember, "/v1/nodes/:node/ports/:port", malformedURI)

	// Ports.
	ports := s.portResource()
	e.GET("/v1/ports", s.listPorts)
	e.GET("/v1/ports/detail", s.listPortsDetail)
	e.POST("/v1/ports", createHandler(s, ports), noConductor)
	e.GET("/v1/ports/:port", getHandler(ports), noConductor)
	e.PATCH("/v1/ports/:port", patchHandler(ports), noConductor)
	e.DELETE("/v1/ports/:port", deleteHandler(ports), noConductor)

	// Drivers.
	e.GET("/v1/drivers", s.listDrivers)
	e.GET("/v1/drivers/:driver", s.getDriver)
	e.GET("/v1/drivers/:driver/properties", s.driverProperties)
	e.GET("/v1/drivers/:driver/raid/logical_disk_properties", s.raidLogicalDiskProperties)
	e.GET("/v1/drivers/:driver/vendor_passthru/methods", s.driverVendorMethods)
	e.Any("/v1/drivers/:driver/vendor_passthru", s.driverVendorPassthru)

	// Volume (1.32).
	connectors, targets := s.volumeResources()
	e.GET("/v1/volume", s.getVolumeRoot, volumeAPI)
	e.GET("/v1/nodes/:node/volume", s.getNodeVolumeRoot, volumeAPI)
	e.GET("/v1/volume/connectors", s.listConnectors, volumeAPI)
	e.GET("/v1/volume/connectors/detail", s.listConnectorsDetail, volumeAPI)
	e.POST("/v1/volume/connectors", createHandler(s, connectors), noConductor, volumeAPI)
	e.GET("/v1/volume/connectors/:id", getHandler(connectors), noConductor, volumeAPI)
	e.PATCH("/v1/volume/connectors/:id", patchHandler(connectors), noConductor, volumeAPI)
	e.DELETE("/v1/volume/connectors/:id", deleteHandler(connectors), noConductor, volumeAPI)
	e.GET("/v1/nodes/:node/volume/connectors", s.listNodeConnectors, volumeAPI)
	e.GET("/v1/volume/targets", s.listTargets, volumeAPI)
	e.GET("/v1/volume/targets/detail", s.listTargetsDetail, volumeAPI)
	e.POST("/v1/volume/targets", createHandler(s, targets), noConductor, volumeAPI)
	e.GET("/v1/volume/targets/:id", getHandler(targets), noConductor, volumeAPI)
	e.PATCH("/v1/volume/targets/:id", patchHandler(targets), noConductor, volumeAPI)
	e.DELETE("/v1/volume/targets/:id", deleteHandler(targets), noConductor, volumeAPI)
	e.GET("/v1/nodes/:node/volume/targets", s.listNodeTargets, volumeAPI)
	e.Match(nestedWrites, "/v1/nodes/:node/volume/connectors", missingVolumeID("connector"), volumeAPI)
	e.Match(nestedWrites, "/v1/nodes/:node/volume/targets", missingVolumeID("target"), volumeAPI)
	e.Match(nestedMember, "/v1/nodes/:node/volume/connectors/:id", nodeScoped(connectors), volumeAPI)
	e.Match(nestedMember, "/v1/nodes/:node/volume/targets/:id", nodeScoped(targets), volumeAPI)

	// Chassis (written by the API alone: no conductor manages one).
	chassis := s.chassisResource()
	e.GET("/v1/chassis", s.listChassis)
	e.GET("/v1/chassis/detail", s.listChassisDetail)
	e.POST("/v1/chassis", createHandler(s, chassis), noConductor)
	e.GET("/v1/chassis/:chassis", getHandler(chassis), noConductor)
	e.PATCH("/v1/chassis/:chassis", patchHandler(chassis), noConductor)
	e.DELETE("/v1/chassis/:chassis", deleteHandler(chassis), noConductor)
	e.GET("/v1/chassis/:chassis/nodes", s.listChassisNodes)
	e.GET("/v1/chassis/:chassis/nodes/detail", s.listChassisNodesDetail)
	e.Match(nestedWrites, "/v1/chassis/:chassis/nodes", malformedURI)
	e.Match(nestedMember, "/v1/chassis/:chassis/nodes/:node", malformedURI)

	// Port groups (1.23) and their nested collections (1.24).
	pgs := s.portgroupResource()
	e.GET("/v1/portgroups", s.listPortgroups, portgroupAPI)
	e.GET("/v1/portgroups/detail", s.listPortgroupsDetail, portgroupAPI)
	e.POST("/v1/portgroups", createHandler(s, pgs), noConductor, portgroupAPI)
	e.GET("/v1/portgroups/:portgroup", getHandler(pgs), noConductor, portgroupAPI)
	e.PATCH("/v1/portgroups/:portgroup", patchHandler(pgs), noConductor, portgroupAPI)
	e.DELETE("/v1/portgroups/:portgroup", deleteHandler(pgs), noConductor, portgroupAPI)
	e.GET("/v1/portgroups/:portgroup/ports", s.listPortgroupPorts, portgroupSubs)
	e.GET("/v1/portgroups/:portgroup/ports/detail", s.listPortgroupPortsDetail, portgroupSubs)
	e.GET("/v1/nodes/:node/portgroups", s.listNodePortgroups, portgroupSubs)
	e.GET("/v1/nodes/:node/portgroups/detail", s.listNodePortgroupsDetail, portgroupSubs)
	e.Match(nestedWrites, "/v1/portgroups/:portgroup/ports", malformedURI, portgroupSubs)
	e.Match(nestedWrites, "/v1/nodes/:node/portgroups", malformedURI, portgroupSubs)
	e.Match(nestedMember, "/v1/portgroups/:portgroup/ports/:port", malformedURI, portgroupSubs)
	e.Match(nestedMember, "/v1/nodes/:node/portgroups/:pg", malformedURI, portgroupSubs)

	// Ramdisk (the deploy agent's own endpoints).
	e.GET("/v1/lookup", s.lookup, noConductor, ramdiskAPI)
	e.POST("/v1/heartbeat/:node", s.heartbeat, noConductor, ramdiskAPI)

	// Node BIOS settings.
	e.GET("/v1/nodes/:node/bios", s.listBIOS, biosAPI)
	e.GET("/v1/nodes/:node/bios/:setting", s.getBIOS, biosAPI)

	// Conductors.
	e.GET("/v1/conductors", s.listConductors, conductorsAPI)
	e.GET("/v1/conductors/:hostname", s.getConductor, conductorsAPI)
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
