package apiservice

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/api-service/volume"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

// volumeRoutes adds the volume API (docs/api.md §4.5). Every route answers
// 404 below 1.32, as if it did not exist.
func (s *Server) volumeRoutes(e *echo.Echo) {
	e.GET("/v1/volume", s.getVolumeRoot)
	e.GET("/v1/nodes/:node/volume", s.getNodeVolumeRoot)

	connectors, targets := s.volumeResources()
	e.GET("/v1/volume/connectors", s.listConnectors)
	e.GET("/v1/volume/connectors/detail", s.listConnectorsDetail)
	crudRoutes(e, "/v1/volume/connectors", s, connectors, volumeOnly)
	e.GET("/v1/nodes/:node/volume/connectors", s.listNodeConnectors)

	e.GET("/v1/volume/targets", s.listTargets)
	e.GET("/v1/volume/targets/detail", s.listTargetsDetail)
	crudRoutes(e, "/v1/volume/targets", s, targets, volumeOnly)
	e.GET("/v1/nodes/:node/volume/targets", s.listNodeTargets)

	// The node-scoped collections are read-only.
	for _, m := range []string{http.MethodPost, http.MethodPatch, http.MethodDelete} {
		e.Add(m, "/v1/nodes/:node/volume/connectors", volumeOnly(missingVolumeID("connector")))
		e.Add(m, "/v1/nodes/:node/volume/targets", volumeOnly(missingVolumeID("target")))
	}
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		e.Add(m, "/v1/nodes/:node/volume/connectors/:id", volumeOnly(nodeScoped(connectors)))
		e.Add(m, "/v1/nodes/:node/volume/targets/:id", volumeOnly(nodeScoped(targets)))
	}
}

// volumeOnly hides a handler below 1.32.
func volumeOnly(h echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := requireVolumeAPI(c); err != nil {
			return err
		}
		return h(c)
	}
}

func requireVolumeAPI(c echo.Context) error {
	if !version(c).AtLeast(microversion.VolumeAPI) {
		return errs.New(errs.KindNotFound, "The API is not supported for this version")
	}
	return nil
}

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
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volumeRootDoc(s.baseURL(c), "volume"))
}

// getNodeVolumeRoot builds its links from the identifier as given. Unlike
// Ironic it checks that the node exists.
func (s *Server) getNodeVolumeRoot(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	if err := query.Check(c.QueryParams()); err != nil {
		return err
	}
	id := c.Param("node")
	if _, err := s.findNode(c, id); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volumeRootDoc(s.baseURL(c), "nodes/"+id+"/volume"))
}

// volumeCollection binds a list endpoint to one resource type.
type volumeCollection[T any] struct {
	res  volume.Resource
	list func(ctx context.Context, f db.VolumeFilter, p db.Page, columns []string) ([]T, error)
	// appendJSON writes one item's representation.
	appendJSON func(buf []byte, base string, item *T, fields []string) ([]byte, error)
	uuid       func(item *T) string
	// sizeHint is about how many bytes a full item takes.
	sizeHint int
}

func (s *Server) connectorCollection() volumeCollection[model.VolumeConnector] {
	return volumeCollection[model.VolumeConnector]{res: volume.Connectors, list: s.store.ListVolumeConnectors,
		appendJSON: volume.AppendConnector, uuid: func(v *model.VolumeConnector) string { return v.UUID }, sizeHint: 512}
}

func (s *Server) targetCollection() volumeCollection[model.VolumeTarget] {
	return volumeCollection[model.VolumeTarget]{res: volume.Targets, list: s.store.ListVolumeTargets,
		appendJSON: volume.AppendTarget, uuid: func(v *model.VolumeTarget) string { return v.UUID }, sizeHint: 768}
}

func (s *Server) listConnectors(c echo.Context) error {
	return serveVolumeList(s, c, s.connectorCollection(), "", false)
}

func (s *Server) listConnectorsDetail(c echo.Context) error {
	return serveVolumeList(s, c, s.connectorCollection(), "", true)
}

func (s *Server) listNodeConnectors(c echo.Context) error {
	return serveVolumeList(s, c, s.connectorCollection(), c.Param("node"), false)
}

func (s *Server) listTargets(c echo.Context) error {
	return serveVolumeList(s, c, s.targetCollection(), "", false)
}

func (s *Server) listTargetsDetail(c echo.Context) error {
	return serveVolumeList(s, c, s.targetCollection(), "", true)
}

func (s *Server) listNodeTargets(c echo.Context) error {
	return serveVolumeList(s, c, s.targetCollection(), c.Param("node"), false)
}

// volumeListRequest is a parsed volume list query.
type volumeListRequest struct {
	page   query.Page
	detail *bool
	// fields in effect: the requested ones, the defaults, or nil (detail).
	fields    []string
	requested bool
	node      string
}

// parseVolumeList reads a list query; the /detail path lists full
// objects and takes neither fields nor detail, like the other /detail lists.
func parseVolumeList(q map[string][]string, res volume.Resource, maxLimit int, detailPath bool) (volumeListRequest, error) {
	var r volumeListRequest
	allowed := []string{"node", "limit", "marker", "sort_key", "sort_dir"}
	if !detailPath {
		allowed = append(allowed, "fields", "detail")
	}
	if err := query.Check(q, allowed...); err != nil {
		return r, err
	}
	page, err := query.ParsePage(q, maxLimit)
	if err != nil {
		return r, err
	}
	r.page = page
	if r.detail, err = query.Bool(q, "detail"); err != nil {
		return r, err
	}
	r.fields = query.Fields(q)
	r.requested = r.fields != nil
	if r.requested {
		if r.detail != nil && *r.detail {
			return r, errs.InvalidParameterValue("Can't fetch a subset of fields with 'detail' set")
		}
		if err := res.CheckFields(r.fields); err != nil {
			return r, err
		}
	} else if !detailPath && (r.detail == nil || !*r.detail) {
		r.fields = res.DefaultFields
	}
	if r.page.Marker != "" {
		m, ok := ident.CanonicalUUID(r.page.Marker)
		if !ok {
			return r, errs.InvalidParameterValue("Expected UUID for marker: %s", r.page.Marker)
		}
		r.page.Marker = m
	}
	if len(q["node"]) > 0 {
		r.node = q["node"][0]
	}
	return r, nil
}

// serveVolumeList serves a connector or target list, node-scoped when
// scope (a node UUID or name from the path) is set; the node query
// parameter is then ignored. detailPath is /v1/volume/<collection>/detail.
func serveVolumeList[T any](s *Server, c echo.Context, vc volumeCollection[T], scope string, detailPath bool) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	q := c.QueryParams()
	r, err := parseVolumeList(q, vc.res, s.maxLimit(), detailPath)
	if err != nil {
		return err
	}
	var filter db.VolumeFilter
	nodeIdent := scope
	if scope == "" {
		nodeIdent = r.node
	}
	if nodeIdent != "" {
		id, err := s.volumeNodeID(c, nodeIdent)
		if err != nil {
			return err
		}
		filter.NodeID = &id
	}
	ctx := c.Request().Context()
	items, err := vc.list(ctx, filter, db.Page{Limit: r.page.Limit, Marker: r.page.Marker,
		SortKey: r.page.SortKey, SortDir: r.page.SortDir}, vc.res.Columns(r.fields))
	if err != nil {
		return err
	}
	base := s.baseURL(c)
	// {"<collection>": [...], "next": ...}: encoding/json's key order.
	buf := jsonBuffer(128 + len(items)*vc.sizeHint)
	buf = append(buf, `{"`...)
	buf = append(buf, vc.res.Collection...)
	buf = append(buf, `":[`...)
	for i := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = vc.appendJSON(buf, base, &items[i], r.fields); err != nil {
			return err
		}
	}
	buf = append(buf, ']')
	if len(items) == r.page.Limit && len(items) > 0 {
		path := "/v1/" + vc.res.Path
		carry := []query.Param{{Key: "sort_key", Value: r.page.SortKey}, {Key: "sort_dir", Value: r.page.SortDir}}
		if scope != "" {
			path = "/v1/nodes/" + scope + "/" + vc.res.Path
		} else if r.node != "" {
			// Ironic drops the filter here; keeping it keeps the result set.
			carry = append(carry, query.Param{Key: "node", Value: r.node})
		}
		if detailPath {
			path += "/detail"
		}
		if r.detail != nil {
			carry = append(carry, query.Param{Key: "detail", Value: query.PyBool(*r.detail)})
		}
		if r.fields != nil {
			carry = append(carry, query.Param{Key: "fields", Value: strings.Join(r.fields, ",")})
		}
		buf = append(buf, `,"next":`...)
		buf = present.AppendString(buf, query.NextURL(base, path, carry, r.page.Limit, vc.uuid(&items[len(items)-1])))
	}
	return s.sendJSON(c, http.StatusOK, append(buf, '}'))
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

// volumeShowFields reads the query of a single-object GET: fields only.
func volumeShowFields(c echo.Context, res volume.Resource) ([]string, error) {
	q := c.QueryParams()
	if err := query.Check(q, "fields"); err != nil {
		return nil, err
	}
	fields := query.Fields(q)
	if fields != nil {
		if err := res.CheckFields(fields); err != nil {
			return nil, err
		}
	}
	return fields, nil
}

func volumeID(res volume.Resource, id string) (string, error) {
	u, ok := ident.CanonicalUUID(id)
	if !ok {
		return "", errs.InvalidParameterValue("Expected UUID for %s_uuid: %s", res.Singular, id)
	}
	return u, nil
}

func (s *Server) findConnector(c echo.Context, id string) (*model.VolumeConnector, error) {
	u, err := volumeID(volume.Connectors, id)
	if err != nil {
		return nil, err
	}
	return s.store.GetVolumeConnector(c.Request().Context(), u)
}

func (s *Server) findTarget(c echo.Context, id string) (*model.VolumeTarget, error) {
	u, err := volumeID(volume.Targets, id)
	if err != nil {
		return nil, err
	}
	return s.store.GetVolumeTarget(c.Request().Context(), u)
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
