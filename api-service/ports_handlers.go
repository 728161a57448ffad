package apiservice

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/ports"
	"github.com/ferricbm/ferric/rpc"
)

func (s *Server) findPort(c echo.Context, id string) (*model.Port, error) {
	return byUUID(c, id, s.store.GetPort, expectedUUID)
}

func (s *Server) listPorts(c echo.Context) error       { return s.portList(c, false, listScope{}) }
func (s *Server) listPortsDetail(c echo.Context) error { return s.portList(c, true, listScope{}) }
func (s *Server) listNodePorts(c echo.Context) error {
	return s.portList(c, false, listScope{"nodes", c.Param("node")})
}
func (s *Server) listNodePortsDetail(c echo.Context) error {
	return s.portList(c, true, listScope{"nodes", c.Param("node")})
}
func (s *Server) listPortgroupPorts(c echo.Context) error {
	return s.portList(c, false, listScope{"portgroups", c.Param("portgroup")})
}
func (s *Server) listPortgroupPortsDetail(c echo.Context) error {
	return s.portList(c, true, listScope{"portgroups", c.Param("portgroup")})
}

// portList serves /v1/ports[/detail] and, with a scope, the nested
// /v1/nodes/{n}/ports[/detail] and /v1/portgroups/{pg}/ports[/detail].
func (s *Server) portList(c echo.Context, detailPath bool, scope listScope) error {
	spec := list.Spec[model.Port]{Catalogue: ports.Resource, Dialect: list.Classic, Collection: "ports",
		Path: scope.path("ports", detailPath), DetailPath: detailPath, Resolve: s.listIdent(c),
		Prepare: func(q url.Values) (list.Fetch[model.Port], error) {
			if (q.Has("node") || q.Has("node_uuid")) && q.Has("portgroup") {
				return nil, errs.New(errs.KindOperationNotPermitted, "Operation not permitted.")
			}
			return func(page db.Page, _, columns []string, match []filter.Condition) (list.Page[model.Port], error) {
				return s.fetchPorts(c, scope, page, columns, match)
			}, nil
		}}
	if scope.kind == "" {
		spec.Filters = ports.Resource.Filters()
	}
	return serveList(s, c, spec)
}

func (s *Server) fetchPorts(c echo.Context, scope listScope, page db.Page, columns []string, match []filter.Condition) (list.Page[model.Port], error) {
	var none list.Page[model.Port]
	pf := db.PortFilter{Match: match}
	if scope.kind == "portgroups" {
		pg, err := s.findPortgroup(c, scope.ident)
		if err != nil {
			return none, err
		}
		pf.PortgroupID = &pg.ID
	}
	if scope.kind == "nodes" {
		nodeID, err := s.listNodeID(c, scope.ident)
		if err != nil {
			return none, err
		}
		pf.NodeID = nodeID
	}
	items, err := s.store.ListPorts(c.Request().Context(), pf, page, columns)
	return list.Page[model.Port]{Items: items}, err
}

// portNode finds the node a port is attached to by the node_uuid a client
// gave; an unknown node is the client's error (400), not a missing URL.
func (s *Server) portNode(c echo.Context, nodeUUID string) (*model.Node, error) {
	n, err := s.store.GetNode(c.Request().Context(), nodeUUID)
	return n, referenced(err)
}

// portResource describes ports to the generic handlers.
func (s *Server) portResource() resource[model.Port] {
	return nodeResource(s, nodeObject[model.Port, rpc.PortArgs]{param: "port", path: "ports", find: s.findPort,
		checkFields: ports.Resource.CheckOutputFields, newOwner: s.portNode, patchOwner: s.portNode,
		decode: ports.DecodeCreate, join: s.joinPortgroup, apply: ports.Apply, insert: s.store.CreatePort,
		ids:      func(p *model.Port) (string, string, *int64) { return p.UUID, p.NodeUUID, &p.NodeID },
		encode:   catalogued(s, ports.Resource),
		sizeHint: ports.Resource.SizeHint,
		args:     func(p model.Port) rpc.PortArgs { return rpc.PortArgs{Port: p} },
		patchArgs: func(uuid string, patch []byte, v microversion.Version) rpc.PortArgs {
			return rpc.PortArgs{PortID: uuid, Patch: patch, APIVersion: v.String()}
		},
		update: rpc.UpdatePort, destroy: rpc.DestroyPort})
}

// joinPortgroup puts a new port of node n in the port group its body names.
func (s *Server) joinPortgroup(c echo.Context, p *model.Port, body map[string]any, n *model.Node) error {
	if p.PortgroupUUID == nil {
		return nil
	}
	pg, err := s.memberPortgroup(c, *p.PortgroupUUID, n)
	if err != nil {
		return err
	}
	// Only an explicit pxe_enabled counts, as in Ironic: the default
	// does not make a port standalone.
	if _, explicit := body["pxe_enabled"]; explicit && p.PXEEnabled && !pg.StandalonePortsSupported {
		return errs.New(errs.KindConflict, "Port group %s doesn't support standalone ports. This port cannot be created as a member of that port group because 'pxe_enabled' was set to True.", pg.UUID)
	}
	members, err := s.store.ListPorts(c.Request().Context(), db.PortFilter{PortgroupID: &pg.ID}, db.Page{}, []string{"uuid", "physical_network"})
	if err != nil {
		return err
	}
	if err := ports.CheckGroupPhysnet(p, pg.UUID, members); err != nil {
		return err
	}
	p.PortgroupID = &pg.ID
	return nil
}
