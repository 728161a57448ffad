package apiservice

import (
	"math/rand/v2"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/allocations"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/rpc"
)

// findAllocation resolves an allocation identifier: a UUID or a name.
func (s *Server) findAllocation(c echo.Context, id string) (*model.Allocation, error) {
	return byUUIDOrName(c, id, s.store.GetAllocation, s.store.GetAllocationByName)
}

// anyConductor is a live conductor picked at random: an allocation
// concerns no node yet, so any conductor may process it.
func (s *Server) anyConductor(c echo.Context) (rpc.Endpoint, error) {
	hosts, err := s.ring.Hosts(c.Request().Context())
	if err != nil {
		return rpc.Endpoint{}, err
	}
	if len(hosts) == 0 {
		return rpc.Endpoint{}, errs.New(errs.KindNoValidHost, "No valid host was found. Reason: No conductor service registered")
	}
	return s.rpc.Conductor(hosts[rand.IntN(len(hosts))]), nil
}

// listAllocations serves GET /v1/allocations.
func (s *Server) listAllocations(c echo.Context) error {
	resolve := s.listIdent(c)
	return serveList(s, c, list.Spec[model.Allocation]{Catalogue: allocations.Resource, Dialect: list.Allocations,
		Collection: "allocations", Path: listScope{}.path("allocations", false), Filters: allocations.Resource.Filters(),
		// An unknown node in the filter is the query's mistake.
		Resolve: func(q catalogue.Query, ident string) (any, error) {
			id, err := resolve(q, ident)
			return id, referenced(err)
		},
		Prepare: func(url.Values) (list.Fetch[model.Allocation], error) {
			return func(page db.Page, _, columns []string, match []filter.Condition) (list.Page[model.Allocation], error) {
				items, err := s.store.ListAllocations(c.Request().Context(), db.AllocationFilter{Match: match}, page, columns)
				return list.Page[model.Allocation]{Items: items}, err
			}, nil
		}})
}

// allocationResource describes allocations to the generic handlers.
// Creation and deletion go to a conductor: it looks for the node, and
// locks it to release it.
func (s *Server) allocationResource() resource[model.Allocation] {
	return resource[model.Allocation]{
		param:       "allocation",
		find:        s.findAllocation,
		checkFields: allocations.Resource.CheckOutputFields,
		create: func(c echo.Context, body map[string]any) (*model.Allocation, error) {
			a, err := allocations.DecodeCreate(body, version(c))
			if err != nil {
				return nil, err
			}
			for i, id := range a.CandidateNodes {
				n, err := s.findNode(c, id)
				if err != nil {
					return nil, referenced(err)
				}
				a.CandidateNodes[i] = n.UUID
			}
			ep, err := s.anyConductor(c)
			if err != nil {
				return nil, err
			}
			created, err := rpc.CreateAllocation.Call(c.Request().Context(), ep, rpc.AllocationArgs{Allocation: *a})
			if err != nil {
				return nil, err
			}
			return &created, nil
		},
		location: func(a *model.Allocation) string { return "/v1/allocations/" + a.UUID },
		apply: func(c echo.Context, a *model.Allocation, ops []jsonpatch.Op) (*model.Allocation, error) {
			return allocations.Apply(a, ops, version(c))
		},
		// Name and extra are the allocation's own: no node or conductor
		// takes part in changing them.
		update: func(c echo.Context, patched *model.Allocation, _ []byte) (*model.Allocation, error) {
			return patched, s.store.SaveAllocation(c.Request().Context(), patched)
		},
		destroy:  s.destroyAllocation,
		encode:   catalogued(s, allocations.Resource),
		sizeHint: allocations.Resource.SizeHint,
	}
}

// destroyAllocation has the conductor of the allocation's node release
// it, or any conductor when it has none.
func (s *Server) destroyAllocation(c echo.Context, a *model.Allocation) error {
	ctx := c.Request().Context()
	var ep rpc.Endpoint
	if a.NodeUUID != nil {
		n, err := s.store.GetNode(ctx, *a.NodeUUID)
		if err != nil {
			return err
		}
		ep = s.rpc.ForNode(n)
	} else {
		var err error
		if ep, err = s.anyConductor(c); err != nil {
			return err
		}
	}
	return rpc.DestroyAllocation.Call(ctx, ep, rpc.AllocationArgs{Allocation: *a})
}

// findNodeAllocation is the allocation that reserved the node of the
// path.
func (s *Server) findNodeAllocation(c echo.Context, nodeIdent string) (*model.Allocation, error) {
	n, err := s.findNode(c, nodeIdent)
	if err != nil {
		return nil, err
	}
	return s.store.GetNodeAllocation(c.Request().Context(), n.ID, nodeIdent)
}

// nodeAllocationResource serves /v1/nodes/{node}/allocation, the node's
// allocation as a single object.
func (s *Server) nodeAllocationResource() resource[model.Allocation] {
	r := s.allocationResource()
	r.param = "node"
	r.find = s.findNodeAllocation
	return r
}
