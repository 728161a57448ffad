package apiservice

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/ident"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/nodes"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var errMalformedURI = errs.New(errs.KindMalformedRequestURI, "Malformed request URI.")

// findNode resolves a node identifier (docs/api.md §3.2): a UUID, or from 1.5 a
// name; names are not identifiers before 1.5.
func (s *Server) findNode(c echo.Context, id string) (*model.Node, error) {
	ctx := c.Request().Context()
	if u, ok := ident.CanonicalUUID(id); ok {
		return s.store.GetNode(ctx, u)
	}
	v := version(c)
	if !v.AtLeast(microversion.NodeNames) {
		return nil, errs.NodeNotFound(id)
	}
	if !ident.ValidNodeName(id, v) {
		return nil, errs.InvalidParameterValue("Expected a logical name or UUID but received %s.", id)
	}
	n, err := s.store.GetNodeByName(ctx, id)
	if stripped, _ := c.Get(keyStrippedJSON).(bool); stripped && errs.Is(err, errs.KindNodeNotFound) {
		// The suffix may have been part of the name after all.
		if alt, altErr := s.store.GetNodeByName(ctx, id+jsonSuffix); altErr == nil {
			return alt, nil
		}
	}
	return n, err
}

func (s *Server) nodeView(c echo.Context, fields []string) nodes.View {
	vw := nodes.View{Version: version(c), Base: s.baseURL(c), Fields: fields}
	if vw.Version.AtLeast(microversion.ConductorField) {
		vw.Conductor = s.nodeConductors(c.Request().Context())
	}
	return vw
}

// nodeFilterParams are the node list filters and the version each needs.
var nodeFilterParams = map[string]microversion.Version{
	"chassis_uuid": microversion.Min, "instance_uuid": microversion.Min, "associated": microversion.Min,
	"maintenance": microversion.Min, "provision_state": microversion.ProvisionFilter,
	"driver": microversion.DriverFilter, "resource_class": microversion.ResourceClassField,
	"fault": microversion.V1(42), "conductor_group": microversion.ConductorGroup,
	"conductor": microversion.V1(49), "owner": microversion.V1(50),
	"description_contains": microversion.V1(51), "retired": microversion.V1(61),
	"lessee": microversion.V1(65), "shard": microversion.V1(82), "sharded": microversion.V1(82),
	"parent_node": microversion.V1(83), "include_children": microversion.V1(83),
	"instance_name": microversion.V1(104),
}

var nodeFaults = map[string]bool{"power failure": true, "clean failure": true,
	"rescue abort failure": true, "service failure": true}

var forbiddenNodeSortKeys = map[string]bool{"properties": true, "driver_info": true, "extra": true,
	"instance_info": true, "driver_internal_info": true, "clean_step": true, "deploy_step": true,
	"raid_config": true, "target_raid_config": true, "traits": true, "network_data": true, "service_step": true}

// listRequest is a parsed collection GET shared by nodes and ports.
type listRequest struct {
	page   query.Page
	fields []string
	detail bool
	carry  []query.Param
}

// parseList handles fields/detail/paging for a list endpoint. detailPath
// is true on the /detail sub-path, where fields and detail are not taken.
func parseList(c echo.Context, q url.Values, detailPath bool, defaults []string, catalogue []present.Field, maxLimit int) (listRequest, error) {
	v := version(c)
	var lr listRequest
	page, err := query.ParsePage(q, maxLimit)
	if err != nil {
		return lr, err
	}
	lr.page = page
	if !detailPath && q.Has("detail") {
		if !v.AtLeast(microversion.DetailParam) {
			return lr, errs.New(errs.KindInvalid, "Invalid query parameter ?detail=%s received.", q.Get("detail"))
		}
		if lr.detail, err = query.ParseBool("detail", q.Get("detail")); err != nil {
			return lr, err
		}
	}
	lr.fields = query.Fields(q)
	if lr.fields != nil {
		if !v.AtLeast(microversion.Fields) {
			return lr, errs.NotAcceptable("")
		}
		if lr.detail {
			return lr, errs.New(errs.KindInvalid, "Can not specify ?detail=True and fields in the same request.")
		}
		if err := present.CheckFields(lr.fields, catalogue, v); err != nil {
			return lr, err
		}
	}
	if detailPath {
		lr.detail = true
	}
	lr.carry = []query.Param{{Key: "sort_key", Value: page.SortKey}, {Key: "sort_dir", Value: page.SortDir}}
	if !lr.detail && lr.fields == nil {
		lr.fields = defaults
	}
	return lr, nil
}

// nextCarry is what a next link repeats besides the marker and the limit:
// the sort, the filters, ?detail as the client gave it and the fields in
// effect.
func (lr listRequest) nextCarry(q url.Values, detailPath bool, filters []query.Param) []query.Param {
	carry := append(lr.carry, filters...)
	if !detailPath && q.Has("detail") {
		carry = append(carry, query.Param{Key: "detail", Value: query.PyBool(lr.detail)})
	}
	if lr.fields != nil {
		carry = append(carry, query.Param{Key: "fields", Value: strings.Join(lr.fields, ",")})
	}
	return carry
}

// canonicalMarker checks that the marker, if any, is a UUID and writes it
// as the database stores UUIDs.
func (lr *listRequest) canonicalMarker() error {
	if lr.page.Marker == "" {
		return nil
	}
	m, ok := ident.CanonicalUUID(lr.page.Marker)
	if !ok {
		return errs.InvalidParameterValue("Expected a UUID but received %s.", lr.page.Marker)
	}
	lr.page.Marker = m
	return nil
}

// checkSortKey validates sort_key for a catalogue of sortable fields.
func checkSortKey(key string, v microversion.Version, lookup func(string) (sortable bool, since microversion.Version, known bool), forbidden map[string]bool) error {
	if key == "id" {
		return nil
	}
	if forbidden[key] {
		return errs.InvalidParameterValue("The sort_key value %s is an invalid field for sorting", key)
	}
	sortable, since, known := lookup(key)
	if !known || !sortable {
		return errs.InvalidParameterValue("The sort_key value \"%s\" is an invalid field for sorting", key)
	}
	if !v.AtLeast(since) {
		return errs.NotAcceptable("")
	}
	return nil
}

func nodeSortable(key string) (bool, microversion.Version, bool) {
	f, ok := nodes.Lookup(key)
	return f.Sortable && f.Implemented(), f.Since, ok
}

func (s *Server) listNodes(c echo.Context) error { return s.nodeList(c, false) }

func (s *Server) listNodesDetail(c echo.Context) error { return s.nodeList(c, true) }

func (s *Server) nodeList(c echo.Context, detailPath bool) error {
	return s.nodeListIn(c, detailPath, "")
}

// nodeListIn serves /v1/nodes[/detail] and, with chassisUUID set, the
// chassis-scoped /v1/chassis/{chassisUUID}/nodes[/detail].
func (s *Server) nodeListIn(c echo.Context, detailPath bool, chassisUUID string) error {
	v := version(c)
	q := c.QueryParams()
	allowed := []string{"limit", "marker", "sort_key", "sort_dir"}
	if !detailPath {
		allowed = append(allowed, "fields", "detail")
	}
	for k := range nodeFilterParams {
		if k != "chassis_uuid" || chassisUUID == "" {
			allowed = append(allowed, k)
		}
	}
	if err := query.Check(q, allowed...); err != nil {
		return err
	}
	for k, since := range nodeFilterParams {
		if q.Has(k) {
			if err := microversion.RequireAtLeast(v, since); err != nil {
				return err
			}
		}
	}
	lr, err := parseList(c, q, detailPath, nodes.DefaultListFields, nodes.OutputFields(), s.maxLimit())
	if err != nil {
		return err
	}
	if err := checkSortKey(lr.page.SortKey, v, nodeSortable, forbiddenNodeSortKeys); err != nil {
		return err
	}
	filter, filterCarry, err := nodeFilter(q)
	if err != nil {
		return err
	}
	if chassisUUID != "" {
		filter.ChassisUUID = &chassisUUID
	}
	if err := lr.canonicalMarker(); err != nil {
		return err
	}
	var columns []string
	if lr.fields != nil {
		columns = selectColumns(lr.fields)
		if q.Has("conductor") {
			columns = selectColumns(append(slices.Clone(lr.fields), "conductor"))
		}
	}
	ctx := c.Request().Context()
	list, err := s.store.ListNodes(ctx, filter, db.Page{Limit: lr.page.Limit, Marker: lr.page.Marker,
		SortKey: lr.page.SortKey, SortDir: lr.page.SortDir}, columns)
	if err != nil {
		return err
	}
	full := len(list) == lr.page.Limit
	var marker string
	if full {
		marker = list[len(list)-1].UUID
	}
	if q.Has("conductor") {
		list = s.onConductor(ctx, list, q.Get("conductor"))
	}
	next := ""
	if full && filter.InstanceUUID == nil {
		path := "/v1/nodes"
		if chassisUUID != "" {
			path = "/v1/chassis/" + chassisUUID + "/nodes"
		}
		if detailPath {
			path += "/detail"
		}
		next = query.NextURL(s.baseURL(c), path, lr.nextCarry(q, detailPath, filterCarry), lr.page.Limit, marker)
	}
	// {"next": ..., "nodes": [...]}, keys in encoding/json's order, each
	// node written straight into the buffer.
	view := s.nodeView(c, lr.fields)
	buf := jsonBuffer(64 + len(list)*nodeJSONSizeHint(lr.fields))
	buf = append(buf, '{')
	if next != "" {
		buf = append(buf, `"next":`...)
		buf = present.AppendString(buf, next)
		buf = append(buf, ',')
	}
	buf = append(buf, `"nodes":[`...)
	for i := range list {
		if i > 0 {
			buf = append(buf, ',')
		}
		if buf, err = view.AppendJSON(buf, &list[i]); err != nil {
			return err
		}
	}
	buf = append(buf, "]}"...)
	return s.sendJSON(c, http.StatusOK, buf)
}

// nodeJSONSizeHint is about how many bytes one listed node takes, so the
// page's buffer is allocated once.
func nodeJSONSizeHint(fields []string) int {
	if fields != nil {
		return 128 + 48*len(fields)
	}
	return 2560
}

func (s *Server) maxLimit() int {
	if s.cfg.API.MaxLimit > 0 {
		return s.cfg.API.MaxLimit
	}
	return 1000
}

// selectColumns are the stored columns needed to render the given fields
// (field names are column names, except the computed conductor; the
// repository always loads id and uuid).
func selectColumns(fields []string) []string {
	cols := []string{"uuid"}
	add := func(c string) {
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	for _, f := range fields {
		if f == "conductor" {
			for _, c := range conductorColumns {
				add(c)
			}
			continue
		}
		add(f)
	}
	return cols
}

// nodeFilter turns the filter parameters into a db.NodeFilter and the
// parameters to carry into the next link (all of them, unlike Ironic, so
// that following next keeps the same result set).
func nodeFilter(q url.Values) (db.NodeFilter, []query.Param, error) {
	var f db.NodeFilter
	var carry []query.Param
	keys := make([]string, 0, len(q))
	for k := range q {
		if _, ok := nodeFilterParams[k]; ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		raw := q.Get(k)
		carry = append(carry, query.Param{Key: k, Value: raw})
		switch k {
		case "chassis_uuid", "instance_uuid":
			u, ok := ident.CanonicalUUID(raw)
			if !ok {
				return f, nil, errs.InvalidParameterValue("Expected a UUID for %s but received %s.", k, raw)
			}
			if k == "chassis_uuid" {
				f.ChassisUUID = &u
			} else {
				f.InstanceUUID = &u
			}
		case "associated", "maintenance":
			b, err := query.ParseBool(k, raw)
			if err != nil {
				return f, nil, err
			}
			if k == "associated" {
				f.Associated = &b
			} else {
				f.Maintenance = &b
			}
			carry[len(carry)-1].Value = query.PyBool(b)
		case "provision_state":
			f.ProvisionStates = query.List(q, k)
			for _, st := range f.ProvisionStates {
				if !states.Valid(st) {
					return f, nil, errs.InvalidParameterValue("Provision state \"%s\" is not valid", st)
				}
			}
		case "driver":
			f.Driver = &raw
		case "resource_class":
			f.ResourceClass = &raw
		case "conductor_group":
			g := strings.ToLower(raw)
			f.ConductorGroup = &g
		case "fault":
			if !nodeFaults[raw] {
				return f, nil, errs.InvalidParameterValue("Unknown fault: %s", raw)
			}
			f.Fault = &raw
		}
	}
	return f, carry, nil
}

func (s *Server) getNode(c echo.Context) error {
	q := c.QueryParams()
	if err := query.Check(q, "fields"); err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	fields := query.Fields(q)
	if fields != nil {
		if err := microversion.RequireAtLeast(version(c), microversion.Fields); err != nil {
			return err
		}
		if err := present.CheckFields(fields, nodes.OutputFields(), version(c)); err != nil {
			return err
		}
	}
	doc, err := s.nodeView(c, fields).AppendJSON(jsonBuffer(nodeJSONSizeHint(fields)), n)
	if err != nil {
		return err
	}
	return s.sendJSON(c, http.StatusOK, doc)
}

func (s *Server) createNode(c echo.Context) error {
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	v := version(c)
	n, err := nodes.DecodeCreate(body, v)
	if err != nil {
		return err
	}
	if err := s.nodeChassis(c, n.ChassisUUID); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.ring.Lookup(ctx, n.ConductorGroup, n.Driver, n.UUID); err != nil {
		if errs.Is(err, errs.KindNoValidHost, errs.KindTemporaryFailure) {
			return noValidHost(n.Driver, n.ConductorGroup)
		}
		return err
	}
	catalog, err := s.catalog(ctx)
	if err != nil {
		return err
	}
	if err := catalog.Resolve(n); err != nil {
		if errs.Is(err, errs.KindDriverNotFound) {
			return noValidHost(n.Driver, n.ConductorGroup)
		}
		return err
	}
	if err := s.store.CreateNode(ctx, n); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, s.baseURL(c)+"/v1/nodes/"+n.UUID)
	return c.JSON(http.StatusCreated, s.nodeView(c, nil).Render(n))
}

func noValidHost(driverName, group string) error {
	return errs.New(errs.KindNoValidHost, "No valid host was found. Reason: No conductor service registered which supports driver %s for conductor group \"%s\". Ensure the driver is valid and enabled.", driverName, group).WithStatus(http.StatusBadRequest)
}

func (s *Server) patchNode(c echo.Context) error {
	v := version(c)
	q := c.QueryParams()
	if err := query.Check(q, "reset_interfaces"); err != nil {
		return err
	}
	reset, err := query.Bool(q, "reset_interfaces")
	if err != nil {
		return err
	}
	if reset != nil {
		if err := microversion.RequireAtLeast(v, microversion.ResetInterfaces); err != nil {
			return err
		}
	}
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	patched, err := nodes.Patch(n, raw, v)
	if err != nil {
		return err
	}
	driverChanged := patched.Driver != n.Driver
	if reset != nil && *reset && !driverChanged {
		return errs.InvalidParameterValue("The reset_interfaces parameter can be provided only when changing the node's driver.")
	}
	if patched.ChassisUUID != nil && (n.ChassisUUID == nil || *patched.ChassisUUID != *n.ChassisUUID) {
		if err := s.nodeChassis(c, patched.ChassisUUID); err != nil {
			return err
		}
	}
	ctx := c.Request().Context()
	if driverChanged || patched.ConductorGroup != n.ConductorGroup {
		if _, err := s.ring.Lookup(ctx, patched.ConductorGroup, patched.Driver, patched.UUID); err != nil {
			if errs.Is(err, errs.KindNoValidHost, errs.KindTemporaryFailure) {
				return noValidHost(patched.Driver, patched.ConductorGroup)
			}
			return err
		}
		catalog, err := s.catalog(ctx)
		if err != nil {
			return err
		}
		if err := catalog.Validate(patched); err != nil && !(reset != nil && *reset) {
			if errs.Is(err, errs.KindDriverNotFound) {
				return noValidHost(patched.Driver, patched.ConductorGroup)
			}
			return err
		}
	} else if err := s.checkInterfaceChange(ctx, n, patched); err != nil {
		return err
	}
	// The conductor applies the patch again to the row it reads under the
	// node lock: n may already be stale.
	updated, err := rpc.UpdateNode.Call(ctx, s.rpc.ForNode(patched), rpc.UpdateNodeArgs{NodeID: n.UUID, Patch: raw, APIVersion: v.String(),
		ResetInterfaces: reset != nil && *reset})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.nodeView(c, nil).Render(&updated))
}

func (s *Server) deleteNode(c echo.Context) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := rpc.DestroyNode.Call(ctx, s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
