package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
)

// listScope is the parent a list is nested under, if any.
type listScope struct {
	// kind is "nodes" or "portgroups"; ident is the parent as the path
	// names it.
	kind, ident string
}

// path is the list's path below the base URL: /v1/<collection>, or
// nested below its scope.
func (sc listScope) path(collection string, detailPath bool) string {
	path := "/v1/" + collection
	if sc.kind != "" {
		path = "/v1/" + sc.kind + "/" + sc.ident + "/" + collection
	}
	if detailPath {
		path += "/detail"
	}
	return path
}

// serveList answers a collection GET with the list pipeline; spec says
// what is particular to the endpoint, the server the rest.
func serveList[M any](s *Server, c echo.Context, spec list.Spec[M]) error {
	spec.View.Version = version(c)
	spec.View.Base = s.baseURL(c)
	spec.MaxLimit = s.maxLimit()
	spec.Buffer = jsonBuffer
	doc, err := list.Run(spec, c.QueryParams())
	if err != nil {
		return err
	}
	return sendJSON(c, http.StatusOK, doc)
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

// listIdent resolves the node or port group an identifier filter of a
// list names to its id; an empty identifier filters nothing.
func (s *Server) listIdent(c echo.Context) list.Resolve {
	return func(q catalogue.Query, ident string) (any, error) {
		if ident == "" {
			return nil, nil
		}
		if q == catalogue.QueryPortgroup {
			pg, err := s.findPortgroup(c, ident)
			if err != nil {
				return nil, err
			}
			return pg.ID, nil
		}
		n, err := s.findNode(c, ident)
		if err != nil {
			return nil, err
		}
		return n.ID, nil
	}
}
