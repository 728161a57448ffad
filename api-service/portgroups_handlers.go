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
	"github.com/ferricbm/ferric/pkg/resource/portgroups"
	"github.com/ferricbm/ferric/rpc"
)

// findPortgroup resolves a port group identifier: a UUID or a name.
func (s *Server) findPortgroup(c echo.Context, id string) (*model.Portgroup, error) {
	return byUUIDOrName(c, id, s.store.GetPortgroup, s.store.GetPortgroupByName)
}

// memberPortgroup finds the group a port of node n joins; an unknown group
// or one of another node is the client's error.
func (s *Server) memberPortgroup(c echo.Context, uuid string, n *model.Node) (*model.Portgroup, error) {
	pg, err := s.store.GetPortgroup(c.Request().Context(), uuid)
	if err != nil {
		return nil, referenced(err)
	}
	if pg.NodeID != n.ID {
		return nil, errs.InvalidParameterValue("Port can not be added to a portgroup belonging to a different node.")
	}
	return pg, nil
}

func (s *Server) listPortgroups(c echo.Context) error       { return s.portgroupList(c, false, "") }
func (s *Server) listPortgroupsDetail(c echo.Context) error { return s.portgroupList(c, true, "") }
func (s *Server) listNodePortgroups(c echo.Context) error {
	return s.portgroupList(c, false, c.Param("node"))
}
func (s *Server) listNodePortgroupsDetail(c echo.Context) error {
	return s.portgroupList(c, true, c.Param("node"))
}

// portgroupList serves /v1/portgroups[/detail] and, with node set, the
// node-scoped /v1/nodes/{node}/portgroups[/detail].
func (s *Server) portgroupList(c echo.Context, detailPath bool, node string) error {
	scope, filters := listScope{}, portgroups.Resource.Filters()
	if node != "" {
		scope, filters = listScope{"nodes", node}, nil
	}
	return serveList(s, c, list.Spec[model.Portgroup]{Catalogue: portgroups.Resource, Dialect: list.Classic,
		Collection: "portgroups", Path: scope.path("portgroups", detailPath), DetailPath: detailPath, Filters: filters,
		Resolve: s.listIdent(c),
		Prepare: func(url.Values) (list.Fetch[model.Portgroup], error) {
			return func(page db.Page, _, columns []string, match []filter.Condition) (list.Page[model.Portgroup], error) {
				nodeID, err := s.listNodeID(c, scope.ident)
				if err != nil {
					return list.Page[model.Portgroup]{}, err
				}
				items, err := s.store.ListPortgroups(c.Request().Context(), db.PortgroupFilter{Match: match, NodeID: nodeID}, page, columns)
				return list.Page[model.Portgroup]{Items: items}, err
			}, nil
		}})
}

// portgroupResource describes port groups to the generic handlers.
func (s *Server) portgroupResource() resource[model.Portgroup] {
	return nodeResource(s, nodeObject[model.Portgroup, rpc.PortgroupArgs]{param: "portgroup", path: "portgroups",
		find: s.findPortgroup, checkFields: portgroups.Resource.CheckOutputFields, newOwner: s.portNode, patchOwner: s.portNode,
		decode: portgroups.DecodeCreate, apply: portgroups.Apply, insert: s.store.CreatePortgroup,
		ids:      func(pg *model.Portgroup) (string, string, *int64) { return pg.UUID, pg.NodeUUID, &pg.NodeID },
		encode:   catalogued(s, portgroups.Resource),
		sizeHint: portgroups.Resource.SizeHint,
		args:     func(pg model.Portgroup) rpc.PortgroupArgs { return rpc.PortgroupArgs{Portgroup: pg} },
		patchArgs: func(uuid string, patch []byte, v microversion.Version) rpc.PortgroupArgs {
			return rpc.PortgroupArgs{PortgroupID: uuid, Patch: patch, APIVersion: v.String()}
		},
		update: rpc.UpdatePortgroup, destroy: rpc.DestroyPortgroup})
}
