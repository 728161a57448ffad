package apiservice

import (
	"context"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/resource/volume"
)

func missingVolumeID(singular string) echo.HandlerFunc {
	return func(echo.Context) error {
		return errs.New(errs.KindMissingParameterValue, "Missing argument: \"%s_uuid\"", singular)
	}
}

// nodeScoped refuses any access to one connector or target through a
// node path, after checking it exists (an unknown one is a 404).
func nodeScoped[T any](r resource[T]) echo.HandlerFunc {
	return func(c echo.Context) error {
		if _, err := r.find(c, c.Param(r.param)); err != nil {
			return err
		}
		return errMalformedURI
	}
}

// volumeRootDoc is the links document of /v1/volume and of a node's
// volume; prefix is the path below the base URL without /v1.
func volumeRootDoc(base, prefix string) map[string]any {
	return map[string]any{
		"links":      present.Links(base, prefix+"/"),
		"connectors": present.Links(base, prefix+"/connectors"),
		"targets":    present.Links(base, prefix+"/targets"),
	}
}

func (s *Server) getVolumeRoot(c echo.Context) error {
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volumeRootDoc(s.baseURL(c), "volume"))
}

// getNodeVolumeRoot builds its links from the identifier as given. Unlike
// Ironic it checks that the node exists.
func (s *Server) getNodeVolumeRoot(c echo.Context) error {
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return err
	}
	id := c.Param("node")
	if _, err := s.findNode(c, id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volumeRootDoc(s.baseURL(c), "nodes/"+id+"/volume"))
}

func (s *Server) listConnectors(c echo.Context) error {
	return serveVolumeList(s, c, volume.Connectors, volume.ConnectorCatalogue, s.store.ListVolumeConnectors, "", false)
}

func (s *Server) listConnectorsDetail(c echo.Context) error {
	return serveVolumeList(s, c, volume.Connectors, volume.ConnectorCatalogue, s.store.ListVolumeConnectors, "", true)
}

func (s *Server) listNodeConnectors(c echo.Context) error {
	return serveVolumeList(s, c, volume.Connectors, volume.ConnectorCatalogue, s.store.ListVolumeConnectors, c.Param("node"), false)
}

func (s *Server) listTargets(c echo.Context) error {
	return serveVolumeList(s, c, volume.Targets, volume.TargetCatalogue, s.store.ListVolumeTargets, "", false)
}

func (s *Server) listTargetsDetail(c echo.Context) error {
	return serveVolumeList(s, c, volume.Targets, volume.TargetCatalogue, s.store.ListVolumeTargets, "", true)
}

func (s *Server) listNodeTargets(c echo.Context) error {
	return serveVolumeList(s, c, volume.Targets, volume.TargetCatalogue, s.store.ListVolumeTargets, c.Param("node"), false)
}

// serveVolumeList serves a connector or target list, node-scoped when
// scope (a node UUID or name from the path) is set. detailPath is
// /v1/volume/<collection>/detail.
func serveVolumeList[M any](s *Server, c echo.Context, res volume.Resource, cat *catalogue.Catalogue[M],
	read func(ctx context.Context, f db.VolumeFilter, p db.Page, columns []string) ([]M, error), scope string, detailPath bool) error {
	sc := listScope{}
	if scope != "" {
		sc = listScope{"nodes", scope}
	}
	return serveList(s, c, list.Spec[M]{Catalogue: cat, Dialect: list.Volume, Collection: res.Collection,
		Path: sc.path(res.Path, detailPath), DetailPath: detailPath, Filters: cat.Filters(),
		// A node-scoped list takes the node parameter too, and ignores it.
		Resolve: func(_ catalogue.Query, nodeIdent string) (any, error) {
			if scope != "" || nodeIdent == "" {
				return nil, nil
			}
			return s.volumeNodeID(c, nodeIdent)
		},
		Prepare: func(url.Values) (list.Fetch[M], error) {
			return func(page db.Page, _, columns []string, match []filter.Condition) (list.Page[M], error) {
				vf := db.VolumeFilter{Match: match}
				if scope != "" {
					id, err := s.volumeNodeID(c, scope)
					if err != nil {
						return list.Page[M]{}, err
					}
					vf.NodeID = &id
				}
				items, err := read(c.Request().Context(), vf, page, columns)
				return list.Page[M]{Items: items}, err
			}, nil
		}})
}

// volumeNodeID resolves the node of a volume list to its id. A UUID is
// looked up reading only the id column: a full node row carries several
// JSON documents that a list filter does not need.
func (s *Server) volumeNodeID(c echo.Context, nodeIdent string) (int64, error) {
	u, ok := ident.CanonicalUUID(nodeIdent)
	if !ok {
		n, err := s.findNode(c, nodeIdent)
		if err != nil {
			return 0, err
		}
		return n.ID, nil
	}
	ns, err := s.store.ListNodes(c.Request().Context(), db.NodeFilter{UUIDs: []string{u}}, db.Page{Limit: 1}, []string{"id"})
	if err != nil {
		return 0, err
	}
	if len(ns) == 0 {
		return 0, errs.NodeNotFound(u)
	}
	return ns[0].ID, nil
}

// notVolumeUUID is the error for an identifier of a connector or target
// that is not a UUID, worded as Ironic's.
func notVolumeUUID(res volume.Resource) func(string) error {
	return func(id string) error {
		return errs.InvalidParameterValue("Expected UUID for %s_uuid: %s", res.Singular, id)
	}
}

func (s *Server) findConnector(c echo.Context, id string) (*model.VolumeConnector, error) {
	return byUUID(c, id, s.store.GetVolumeConnector, notVolumeUUID(volume.Connectors))
}

func (s *Server) findTarget(c echo.Context, id string) (*model.VolumeTarget, error) {
	return byUUID(c, id, s.store.GetVolumeTarget, notVolumeUUID(volume.Targets))
}

// volumeOwner finds the node a new connector or target names; a missing
// node is an invalid body, not a missing URL.
func (s *Server) volumeOwner(c echo.Context, nodeUUID string) (*model.Node, error) {
	n, err := s.store.GetNode(c.Request().Context(), nodeUUID)
	if errs.Is(err, errs.KindNodeNotFound) {
		return nil, errs.InvalidParameterValue("Invalid input for field/attribute node_uuid. Value: '%s'. ", nodeUUID)
	}
	return n, err
}

// patchOwner finds the node a patched connector or target belongs to.
func (s *Server) patchOwner(c echo.Context, nodeUUID string) (*model.Node, error) {
	n, err := s.store.GetNode(c.Request().Context(), nodeUUID)
	if errs.Is(err, errs.KindNodeNotFound) {
		return nil, unknownPatchNode(nodeUUID)
	}
	return n, err
}

func unknownPatchNode(nodeUUID string) error {
	return errs.InvalidParameterValue("Unable to apply the requested node_uuid '%s'. Requested value was invalid.", nodeUUID)
}
