package apiservice

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hwcatalog"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
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

func (s *Server) listNodes(c echo.Context) error { return s.nodeList(c, false) }

func (s *Server) listNodesDetail(c echo.Context) error { return s.nodeList(c, true) }

func (s *Server) nodeList(c echo.Context, detailPath bool) error {
	return s.nodeListIn(c, detailPath, "")
}

// nodeListIn serves /v1/nodes[/detail] and, with chassisUUID set, the
// chassis-scoped /v1/chassis/{chassisUUID}/nodes[/detail].
func (s *Server) nodeListIn(c echo.Context, detailPath bool, chassisUUID string) error {
	scope, filters := listScope{}, nodes.Resource.Filters()
	if chassisUUID != "" {
		scope, filters = listScope{"chassis", chassisUUID}, list.Except(filters, "chassis_uuid")
	}
	return serveList(s, c, list.Spec[model.Node]{Catalogue: nodes.Resource, Dialect: list.Classic, Collection: "nodes",
		Path: scope.path("nodes", detailPath), DetailPath: detailPath, Filters: filters, View: s.nodeView(c, nil).Catalogue(),
		Prepare: func(q url.Values) (list.Fetch[model.Node], error) {
			var nf db.NodeFilter
			if chassisUUID != "" {
				nf.Match = []filter.Condition{{Column: "chassis_uuid", Value: chassisUUID}}
			}
			var err error
			if nf.Project, err = s.listProject(c); err != nil {
				return nil, err
			}
			return func(page db.Page, fields, columns []string, match []filter.Condition) (list.Page[model.Node], error) {
				ctx := c.Request().Context()
				nf.Match = append(nf.Match, match...)
				host := q.Get("conductor")
				if fields != nil && q.Has("conductor") {
					columns = nodes.Resource.Columns(append(slices.Clone(fields), "conductor"))
				}
				if columns != nil {
					columns = append(slices.Clone(columns), redactionColumns...)
				}
				items, err := s.store.ListNodes(ctx, nf, page, columns)
				for i := range items {
					s.redactNode(c, &items[i])
				}
				out := list.Page[model.Node]{Items: items, NoNext: q.Has("instance_uuid")}
				if err == nil && q.Has("conductor") {
					// The next link follows the page as read.
					out.Shown = s.onConductor(ctx, slices.Clone(items), host)
				}
				return out, err
			}, nil
		}})
}

func (s *Server) maxLimit() int {
	if s.cfg.API.MaxLimit > 0 {
		return s.cfg.API.MaxLimit
	}
	return 1000
}

func (s *Server) getNode(c echo.Context) error {
	q := c.QueryParams()
	if err := errs.OnlyKeys(q, "fields"); err != nil {
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
		if err := nodes.Resource.CheckOutputFields(fields, version(c)); err != nil {
			return err
		}
	}
	return s.sendNode(c, http.StatusOK, n, fields)
}

// sendNode answers with the node, only fields of it when fields is not nil.
func (s *Server) sendNode(c echo.Context, status int, n *model.Node, fields []string) error {
	shown := *n
	s.redactNode(c, &shown)
	doc, err := s.nodeView(c, fields).AppendJSON(jsonBuffer(nodes.Resource.SizeHint), &shown)
	if err != nil {
		return err
	}
	return sendJSON(c, status, doc)
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
	return s.sendNode(c, http.StatusCreated, n, nil)
}

func noValidHost(driverName, group string) error {
	return errs.New(errs.KindNoValidHost, "No valid host was found. Reason: No conductor service registered which supports driver %s for conductor group \"%s\". Ensure the driver is valid and enabled.", driverName, group).WithStatus(http.StatusBadRequest)
}

func (s *Server) patchNode(c echo.Context) error {
	v := version(c)
	q := c.QueryParams()
	if err := errs.OnlyKeys(q, "reset_interfaces"); err != nil {
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
	rules, err := nodeUpdateRules(n, patched)
	if err != nil {
		return err
	}
	for _, rule := range rules {
		if err := s.authorize(c, rule); err != nil {
			return err
		}
	}
	if err := s.authorizeOwnerChange(c, n, patched); err != nil {
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
	return s.sendNode(c, http.StatusOK, &updated, nil)
}

// authorizeOwnerChange refuses, with 409 as Ironic does, a change of the
// owner of a deployed node to those who do not pass
// baremetal:node:update_owner_provisioned: the instance on it belongs to
// the owner's project.
func (s *Server) authorizeOwnerChange(c echo.Context, before, after *model.Node) error {
	if reflect.DeepEqual(before.Owner, after.Owner) || before.ProvisionState == nil || states.State(*before.ProvisionState) != states.Active {
		return nil
	}
	if err := s.authorize(c, "baremetal:node:update_owner_provisioned"); err != nil {
		return errs.New(errs.KindConflict, "Cannot update owner of node \"%s\" while it is in state \"%s\".", before.UUID, states.Active)
	}
	return nil
}

// askNode sends the node named by the path one method, for a GET that
// takes no query parameters, and returns the node and the reply.
func askNode[R any](s *Server, c echo.Context, m rpc.Method[rpc.NodeArgs, R]) (*model.Node, R, error) {
	var none R
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return nil, none, err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return nil, none, err
	}
	reply, err := m.Call(c.Request().Context(), s.rpc.ForNode(n), nodeArgs(n))
	return n, reply, err
}

// nodeArgs are the arguments of a method that takes only the node.
func nodeArgs(n *model.Node) rpc.NodeArgs { return rpc.NodeArgs{NodeID: n.UUID} }

// commandNode sends the node named by the path one command, whose
// arguments args builds from the node, and answers 204.
func commandNode[A any](s *Server, c echo.Context, cmd rpc.Command[A], args func(n *model.Node) A) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := cmd.Call(c.Request().Context(), s.rpc.ForNode(n), args(n)); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) deleteNode(c echo.Context) error {
	return commandNode(s, c, rpc.DestroyNode, nodeArgs)
}

// checkInterfaceChange validates interface names a PATCH changed on a node
// keeping its driver, so a typo is a 400 here rather than at the conductor.
// A hardware type no live conductor offers is left to the conductor.
func (s *Server) checkInterfaceChange(ctx context.Context, before, after *model.Node) error {
	for _, it := range hwcatalog.InterfaceTypes {
		if !reflect.DeepEqual(*hwcatalog.Field(before, it), *hwcatalog.Field(after, it)) {
			catalog, err := s.catalog(ctx)
			if err != nil {
				return err
			}
			if err := catalog.Validate(after); err != nil && !errs.Is(err, errs.KindDriverNotFound) {
				return err
			}
			return nil
		}
	}
	return nil
}
