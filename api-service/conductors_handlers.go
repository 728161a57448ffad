package apiservice

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

// conductorFields is the ?fields= catalogue of conductors.
var conductorFields = []present.Field{
	{Name: "hostname", Since: microversion.ConductorsAPI}, {Name: "conductor_group", Since: microversion.ConductorsAPI},
	{Name: "alive", Since: microversion.ConductorsAPI}, {Name: "drivers", Since: microversion.ConductorsAPI},
	{Name: "created_at", Since: microversion.ConductorsAPI}, {Name: "updated_at", Since: microversion.ConductorsAPI},
}

var defaultConductorFields = []string{"hostname", "conductor_group", "alive"}

// conductorSortKeys are the stored columns conductors sort by; alive and
// drivers are computed and cannot be sorted on.
var conductorSortKeys = map[string]bool{"id": true, "hostname": true, "conductor_group": true,
	"created_at": true, "updated_at": true}

func (s *Server) listConductors(c echo.Context) error {
	q := c.QueryParams()
	if err := errs.OnlyKeys(q, "limit", "marker", "sort_key", "sort_dir", "fields", "detail"); err != nil {
		return err
	}
	lr, err := list.Parse(q, version(c), false, list.Classic, defaultConductorFields, func(fields []string, v microversion.Version) error {
		return present.CheckFields(fields, conductorFields, v)
	}, s.maxLimit())
	if err != nil {
		return err
	}
	if key := lr.Page.SortKey; !conductorSortKeys[key] {
		if key == "alive" || key == "drivers" {
			return errs.InvalidParameterValue("The sort_key value %s is an invalid field for sorting", key)
		}
		return errs.InvalidParameterValue("The sort_key value \"%s\" is an invalid field for sorting", key)
	}
	ctx := c.Request().Context()
	conductors, err := s.store.ListConductors(ctx, db.Page{Limit: lr.Page.Limit, Marker: lr.Page.Marker,
		SortKey: lr.Page.SortKey, SortDir: lr.Page.SortDir})
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(conductors))
	for i := range conductors {
		obj, err := s.renderConductor(c, &conductors[i], lr.Fields)
		if err != nil {
			return err
		}
		out = append(out, obj)
	}
	doc := map[string]any{"conductors": out}
	if len(conductors) == lr.Page.Limit {
		doc["next"] = lr.Next(s.baseURL(c), "/v1/conductors", nil, conductors[len(conductors)-1].Hostname)
	}
	return c.JSON(http.StatusOK, doc)
}

func (s *Server) getConductor(c echo.Context) error {
	q := c.QueryParams()
	if err := errs.OnlyKeys(q, "fields"); err != nil {
		return err
	}
	fields := query.Fields(q)
	if fields != nil {
		if err := present.CheckFields(fields, conductorFields, version(c)); err != nil {
			return err
		}
	}
	cd, err := s.store.GetConductor(c.Request().Context(), c.Param("hostname"))
	if err != nil {
		return err
	}
	obj, err := s.renderConductor(c, cd, fields)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, obj)
}

// renderConductor is a conductor's JSON object: alive means online with a
// heartbeat within [conductor] heartbeat_timeout; drivers are the
// hardware types it registered.
func (s *Server) renderConductor(c echo.Context, cd *model.Conductor, fields []string) (map[string]any, error) {
	timeout := s.cfg.Conductor.HeartbeatTimeout
	alive := cd.Online && cd.UpdatedAt != nil && time.Since(*cd.UpdatedAt) <= timeout
	obj := map[string]any{
		"hostname":        cd.Hostname,
		"conductor_group": cd.ConductorGroup,
		"alive":           alive,
		"created_at":      present.Time(&cd.CreatedAt),
		"updated_at":      present.Time(cd.UpdatedAt),
		"links":           present.Links(s.baseURL(c), "conductors/"+cd.Hostname),
	}
	if fields == nil || slices.Contains(fields, "drivers") {
		drivers, err := s.store.ConductorHardwareTypes(c.Request().Context(), cd.Hostname)
		if err != nil {
			return nil, err
		}
		obj["drivers"] = drivers
	}
	if fields != nil {
		return present.Select(obj, fields), nil
	}
	return obj, nil
}

// nodeConductors returns the hash ring lookup behind the node "conductor"
// field: the conductor managing a node, nil when none serves it. A miss
// makes the ring rebuild, so each (group, hardware type) misses at most
// once per request.
func (s *Server) nodeConductors(ctx context.Context) func(n *model.Node) *string {
	// missing is made on the first miss: a single node's GET rarely has one.
	var missing map[[2]string]bool
	return func(n *model.Node) *string {
		key := [2]string{strings.ToLower(n.ConductorGroup), n.Driver}
		if missing[key] {
			return nil
		}
		host, err := s.ring.Lookup(ctx, n.ConductorGroup, n.Driver, n.UUID)
		if err != nil {
			if missing == nil {
				missing = map[[2]string]bool{}
			}
			missing[key] = true
			return nil
		}
		return &host
	}
}

// onConductor keeps the nodes managed by the conductor named host (the
// 1.49 "conductor" filter, applied to the page as Ironic does).
func (s *Server) onConductor(ctx context.Context, list []model.Node, host string) []model.Node {
	conductorOf := s.nodeConductors(ctx)
	out := list[:0]
	for i := range list {
		if h := conductorOf(&list[i]); h != nil && *h == host {
			out = append(out, list[i])
		}
	}
	return out
}
