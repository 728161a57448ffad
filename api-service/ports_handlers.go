package apiservice

import (
	"maps"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/ports"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

// portFilterParams are the port list filters and their versions.
var portFilterParams = map[string]microversion.Version{
	"node": microversion.Min, "node_uuid": microversion.Min, "address": microversion.Min,
	"portgroup": microversion.V1(24), "shard": microversion.V1(82),
	"description_contains": microversion.V1(97), "conductor_groups": microversion.V1(99),
}

var forbiddenPortSortKeys = map[string]bool{"extra": true, "internal_info": true, "local_link_connection": true}

func portSortable(key string) (bool, microversion.Version, bool) {
	f, ok := ports.Lookup(key)
	return f.Sortable && f.Implemented(), f.Since, ok
}

func (s *Server) portView(c echo.Context, fields []string) ports.View {
	return ports.View{Version: version(c), Base: s.baseURL(c), Fields: fields}
}

func (s *Server) findPort(c echo.Context, id string) (*model.Port, error) {
	u, ok := ident.CanonicalUUID(id)
	if !ok {
		return nil, errs.InvalidParameterValue("Expected a UUID but received %s.", id)
	}
	return s.store.GetPort(c.Request().Context(), u)
}

func (s *Server) listPorts(c echo.Context) error       { return s.portList(c, false, listScope{}) }
func (s *Server) listPortsDetail(c echo.Context) error { return s.portList(c, true, listScope{}) }
func (s *Server) listNodePorts(c echo.Context) error {
	return s.portList(c, false, listScope{"nodes", c.Param("node")})
}
func (s *Server) listNodePortsDetail(c echo.Context) error {
	return s.portList(c, true, listScope{"nodes", c.Param("node")})
}

// portList serves /v1/ports[/detail] and, with a scope, the nested
// /v1/nodes/{n}/ports[/detail] and /v1/portgroups/{pg}/ports[/detail].
func (s *Server) portList(c echo.Context, detailPath bool, scope listScope) error {
	return serveList(s, c, listing[model.Port]{collection: "ports", defaults: ports.DefaultListFields, catalogue: ports.OutputFields(),
		sortable: portSortable, forbidden: forbiddenPortSortKeys, filters: slices.Collect(maps.Keys(portFilterParams)),
		checkFilters: checkPortFilters, fetch: s.fetchPorts, uuid: func(p *model.Port) string { return p.UUID },
		render: func(c echo.Context, fields []string) func(*model.Port) map[string]any {
			return s.portView(c, fields).Render
		},
	}, detailPath, scope)
}

func checkPortFilters(v microversion.Version, q url.Values) error {
	for k, since := range portFilterParams {
		if q.Has(k) {
			if err := microversion.RequireAtLeast(v, since); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Server) fetchPorts(c echo.Context, q url.Values, scope listScope, page db.Page, columns []string) ([]model.Port, []query.Param, error) {
	if (q.Has("node") || q.Has("node_uuid")) && q.Has("portgroup") {
		return nil, nil, errs.New(errs.KindOperationNotPermitted, "Operation not permitted.")
	}
	var filter db.PortFilter
	var carry []query.Param
	var nodeIdent, pgIdent string
	switch {
	case scope.kind == "nodes":
		nodeIdent = scope.ident
	case scope.kind == "portgroups":
		pgIdent = scope.ident
	case q.Has("node"):
		nodeIdent = q.Get("node")
		carry = append(carry, query.Param{Key: "node", Value: nodeIdent})
	case q.Has("portgroup"):
		pgIdent = q.Get("portgroup")
		carry = append(carry, query.Param{Key: "portgroup", Value: pgIdent})
	}
	if pgIdent != "" {
		pg, err := s.findPortgroup(c, pgIdent)
		if err != nil {
			return nil, nil, err
		}
		filter.PortgroupID = &pg.ID
	}
	nodeID, err := s.listNodeID(c, nodeIdent)
	if err != nil {
		return nil, nil, err
	}
	filter.NodeID = nodeID
	if q.Has("node_uuid") {
		u, ok := ident.CanonicalUUID(q.Get("node_uuid"))
		if !ok {
			return nil, nil, errs.InvalidParameterValue("Expected a UUID for node_uuid but received %s.", q.Get("node_uuid"))
		}
		filter.NodeUUID = &u
		carry = append(carry, query.Param{Key: "node_uuid", Value: u})
	}
	if filter.Address, carry, err = addressFilter(q, carry); err != nil {
		return nil, nil, err
	}
	list, err := s.store.ListPorts(c.Request().Context(), filter, page, columns)
	return list, carry, err
}

// portNode finds the node a port is attached to by the node_uuid a client
// gave; an unknown node is the client's error (400), not a missing URL.
func (s *Server) portNode(c echo.Context, nodeUUID string) (*model.Node, error) {
	n, err := s.store.GetNode(c.Request().Context(), nodeUUID)
	if e, ok := errs.As(err); ok && e.Kind == errs.KindNodeNotFound {
		return nil, e.WithStatus(http.StatusBadRequest)
	}
	return n, err
}

// portResource describes ports to the generic handlers.
func (s *Server) portResource() resource[model.Port] {
	return nodeResource(s, nodeObject[model.Port, rpc.PortArgs]{param: "port", path: "ports", find: s.findPort,
		checkFields: outputFields(ports.OutputFields()), newOwner: s.portNode, patchOwner: s.portNode,
		decode: ports.DecodeCreate, join: s.joinPortgroup, apply: ports.Apply, insert: s.store.CreatePort,
		ids:    func(p *model.Port) (string, string, *int64) { return p.UUID, p.NodeUUID, &p.NodeID },
		render: func(c echo.Context, p *model.Port, fields []string) any { return s.portView(c, fields).Render(p) },
		args:   func(p model.Port) rpc.PortArgs { return rpc.PortArgs{Port: p} },
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
	p.PortgroupID = &pg.ID
	return nil
}
