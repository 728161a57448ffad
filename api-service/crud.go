package apiservice

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

// resource describes a node-like API object (chassis, port, port group,
// volume connector or target) to the generic single-object handlers below.
// The handlers fix the order in which a request is validated, so that the
// same error wins for every resource when several things are wrong.
type resource[T any] struct {
	// param is the path parameter naming the object.
	param string
	find  func(c echo.Context, id string) (*T, error)
	// checkFields validates the ?fields of a GET.
	checkFields func(c echo.Context, fields []string) error
	// fieldsBeforeFind: the volume API rejects bad fields before looking
	// the object up; the older resources look it up first.
	fieldsBeforeFind bool
	// create decodes a new object, resolves what it refers to and stores it.
	create func(c echo.Context, body map[string]any) (*T, error)
	// location is the object's path below the base URL.
	location func(item *T) string
	apply    func(c echo.Context, item *T, ops []jsonpatch.Op) (*T, error)
	// update stores a patched object and returns what was stored.
	update  func(c echo.Context, patched *T) (*T, error)
	destroy func(c echo.Context, item *T) error
	render  func(c echo.Context, item *T, fields []string) any
}

func getHandler[T any](r resource[T]) echo.HandlerFunc {
	return func(c echo.Context) error {
		q := c.QueryParams()
		if err := query.Check(q, "fields"); err != nil {
			return err
		}
		fields := query.Fields(q)
		checkFields := func() error {
			if fields == nil {
				return nil
			}
			if err := microversion.RequireAtLeast(version(c), microversion.Fields); err != nil {
				return err
			}
			return r.checkFields(c, fields)
		}
		if r.fieldsBeforeFind {
			if err := checkFields(); err != nil {
				return err
			}
		}
		item, err := r.find(c, c.Param(r.param))
		if err != nil {
			return err
		}
		if !r.fieldsBeforeFind {
			if err := checkFields(); err != nil {
				return err
			}
		}
		return c.JSON(http.StatusOK, r.render(c, item, fields))
	}
}

func createHandler[T any](s *Server, r resource[T]) echo.HandlerFunc {
	return func(c echo.Context) error {
		body, err := readObject(c, false)
		if err != nil {
			return err
		}
		item, err := r.create(c, body)
		if err != nil {
			return err
		}
		c.Response().Header().Set(echo.HeaderLocation, s.baseURL(c)+r.location(item))
		return c.JSON(http.StatusCreated, r.render(c, item, nil))
	}
}

// patchHandler reads the body before the lookup, so an oversized body is
// refused whether or not the object exists, and decodes the patch after it.
func patchHandler[T any](r resource[T]) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw, err := readBody(c)
		if err != nil {
			return err
		}
		item, err := r.find(c, c.Param(r.param))
		if err != nil {
			return err
		}
		ops, err := jsonpatch.Decode(raw)
		if err != nil {
			return err
		}
		patched, err := r.apply(c, item, ops)
		if err != nil {
			return err
		}
		updated, err := r.update(c, patched)
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, r.render(c, updated, nil))
	}
}

func deleteHandler[T any](r resource[T]) echo.HandlerFunc {
	return func(c echo.Context) error {
		item, err := r.find(c, c.Param(r.param))
		if err != nil {
			return err
		}
		if err := r.destroy(c, item); err != nil {
			return err
		}
		return c.NoContent(http.StatusNoContent)
	}
}

// onConductor makes the update hook of an object whose node's conductor
// writes it, taking the node lock: owner finds the node of the patched
// object, send makes the call.
func onConductor[T any](s *Server, owner func(c echo.Context, patched *T) (*model.Node, error),
	send func(ctx context.Context, api rpc.ConductorAPI, item T) (T, error)) func(echo.Context, *T) (*T, error) {
	return func(c echo.Context, patched *T) (*T, error) {
		n, err := owner(c, patched)
		if err != nil {
			return nil, err
		}
		ctx := c.Request().Context()
		api, err := s.nodeConductor(ctx, n)
		if err != nil {
			return nil, err
		}
		updated, err := send(ctx, api, *patched)
		if err != nil {
			return nil, err
		}
		return &updated, nil
	}
}

// destroyOnConductor makes the destroy hook of an object written by the
// conductor of the node nodeID names.
func destroyOnConductor[T any](s *Server, nodeID func(item *T) int64,
	send func(ctx context.Context, api rpc.ConductorAPI, item T) error) func(echo.Context, *T) error {
	return func(c echo.Context, item *T) error {
		ctx := c.Request().Context()
		n, err := s.store.GetNodeByID(ctx, nodeID(item))
		if err != nil {
			return err
		}
		api, err := s.nodeConductor(ctx, n)
		if err != nil {
			return err
		}
		return send(ctx, api, *item)
	}
}

// nodeConductor finds the conductor of node n; none is the client's
// error (400), as Ironic has it for updates and deletions.
func (s *Server) nodeConductor(ctx context.Context, n *model.Node) (rpc.ConductorAPI, error) {
	api, err := s.conductorFor(ctx, n.ConductorGroup, n.Driver, n.UUID)
	if err != nil {
		return nil, asBadRequest(err)
	}
	return api, nil
}

// crudRoutes adds the create, get, patch and delete routes of r below
// path, each behind gate.
func crudRoutes[T any](e *echo.Echo, path string, gate func(echo.HandlerFunc) echo.HandlerFunc, s *Server, r resource[T]) {
	one := path + "/:" + r.param
	e.POST(path, gate(createHandler(s, r)))
	e.GET(one, gate(getHandler(r)))
	e.PATCH(one, gate(patchHandler(r)))
	e.DELETE(one, gate(deleteHandler(r)))
}
