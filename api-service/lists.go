package apiservice

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
)

// listScope is the parent a list is nested under, if any.
type listScope struct {
	// kind is "nodes" or "portgroups"; ident is the parent as the path
	// names it.
	kind, ident string
}

// listing describes the list endpoints of ports, port groups or chassis
// to serveList.
type listing[T any] struct {
	// collection is the key of the list and the last segment of its path.
	collection string
	defaults   []string
	catalogue  []present.Field
	sortable   func(key string) (sortable bool, since microversion.Version, known bool)
	forbidden  map[string]bool
	// filters are the parameters allowed on an unscoped list;
	// checkFilters, if set, validates them before the common parameters.
	filters      []string
	checkFilters func(v microversion.Version, q url.Values) error
	// fetch resolves the scope and the filters and lists one page; carry
	// are the filters the next link keeps.
	fetch  func(c echo.Context, q url.Values, scope listScope, page db.Page, columns []string) (items []T, carry []query.Param, err error)
	render func(c echo.Context, fields []string) func(item *T) map[string]any
	uuid   func(item *T) string
}

// serveList serves /v1/<collection>[/detail] and, with a scope, the nested
// /v1/<scope kind>/<scope ident>/<collection>[/detail].
func serveList[T any](s *Server, c echo.Context, l listing[T], detailPath bool, scope listScope) error {
	v := version(c)
	q := c.QueryParams()
	allowed := []string{"limit", "marker", "sort_key", "sort_dir"}
	if !detailPath {
		allowed = append(allowed, "fields", "detail")
	}
	if scope.kind == "" {
		allowed = append(allowed, l.filters...)
	}
	if err := query.Check(q, allowed...); err != nil {
		return err
	}
	if l.checkFilters != nil {
		if err := l.checkFilters(v, q); err != nil {
			return err
		}
	}
	lr, err := parseList(c, q, detailPath, l.defaults, l.catalogue, s.maxLimit())
	if err != nil {
		return err
	}
	if err := checkSortKey(lr.page.SortKey, v, l.sortable, l.forbidden); err != nil {
		return err
	}
	if err := lr.canonicalMarker(); err != nil {
		return err
	}
	var columns []string
	if lr.fields != nil {
		columns = selectColumns(lr.fields)
	}
	list, carry, err := l.fetch(c, q, scope, db.Page{Limit: lr.page.Limit, Marker: lr.page.Marker,
		SortKey: lr.page.SortKey, SortDir: lr.page.SortDir}, columns)
	if err != nil {
		return err
	}
	render := l.render(c, lr.fields)
	out := make([]map[string]any, len(list))
	for i := range list {
		out[i] = render(&list[i])
	}
	body := map[string]any{l.collection: out}
	if len(list) == lr.page.Limit {
		path := "/v1/" + l.collection
		if scope.kind != "" {
			path = "/v1/" + scope.kind + "/" + scope.ident + "/" + l.collection
		}
		if detailPath {
			path += "/detail"
		}
		body["next"] = query.NextURL(s.baseURL(c), path, lr.nextCarry(q, detailPath, carry), lr.page.Limit, l.uuid(&list[len(list)-1]))
	}
	return c.JSON(http.StatusOK, body)
}

// listNodeID resolves the node a list is scoped to or filtered by, if
// any, to its id.
func (s *Server) listNodeID(c echo.Context, nodeIdent string) (*int64, error) {
	if nodeIdent == "" {
		return nil, nil
	}
	n, err := s.findNode(c, nodeIdent)
	if err != nil {
		return nil, err
	}
	return &n.ID, nil
}

// addressFilter reads the MAC address filter of a port or port group list
// and adds it, normalized, to what the next link carries.
func addressFilter(q url.Values, carry []query.Param) (*string, []query.Param, error) {
	if !q.Has("address") {
		return nil, carry, nil
	}
	mac, ok := ident.NormalizeMAC(q.Get("address"))
	if !ok {
		return nil, nil, errs.InvalidParameterValue("Expected a MAC address but received %s.", q.Get("address"))
	}
	return &mac, append(carry, query.Param{Key: "address", Value: mac}), nil
}
