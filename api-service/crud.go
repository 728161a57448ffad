package apiservice

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/catalogue"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/rpc"
)

// byUUID loads an object whose only identifier is its UUID; notUUID is
// the error for any other identifier.
func byUUID[T any](c echo.Context, id string, get func(context.Context, string) (*T, error), notUUID func(id string) error) (*T, error) {
	u, ok := ident.CanonicalUUID(id)
	if !ok {
		return nil, notUUID(id)
	}
	return get(c.Request().Context(), u)
}

// byUUIDOrName loads an object named by its UUID or its name (a
// logical name as a node's, at the request's version).
func byUUIDOrName[T any](c echo.Context, id string, get, getByName func(context.Context, string) (*T, error)) (*T, error) {
	ctx := c.Request().Context()
	if u, ok := ident.CanonicalUUID(id); ok {
		return get(ctx, u)
	}
	if !ident.ValidNodeName(id, version(c)) {
		return nil, errs.InvalidParameterValue("Expected a logical name or UUID but received %s.", id)
	}
	return getByName(ctx, id)
}

func expectedUUID(id string) error {
	return errs.InvalidParameterValue("Expected a UUID but received %s.", id)
}

// resource describes a node-like API object (chassis, port, port group,
// volume connector or target) to the generic single-object handlers below.
// The handlers fix the order in which a request is validated, so that the
// same error wins for every resource when several things are wrong.
type resource[T any] struct {
	// param is the path parameter naming the object.
	param string
	find  func(c echo.Context, id string) (*T, error)
	// checkFields validates the ?fields of a GET.
	checkFields func(fields []string, v microversion.Version) error
	// fieldsBeforeFind: the volume API rejects bad fields before looking
	// the object up; the older resources look it up first.
	fieldsBeforeFind bool
	// create decodes a new object, resolves what it refers to and stores it.
	create func(c echo.Context, body map[string]any) (*T, error)
	// location is the object's path below the base URL.
	location func(item *T) string
	apply    func(c echo.Context, item *T, ops []jsonpatch.Op) (*T, error)
	// update stores a patched object and returns what was stored; raw is
	// the patch document the client sent.
	update  func(c echo.Context, patched *T, raw []byte) (*T, error)
	destroy func(c echo.Context, item *T) error
	// encode appends the object's JSON, as the catalogue's encoder writes
	// it, to buf.
	encode func(c echo.Context, buf []byte, item *T, fields []string) ([]byte, error)
	// sizeHint is about how many bytes an object takes as JSON.
	sizeHint int
}

// send answers with the object, only fields of it when fields is not nil.
func (r resource[T]) send(c echo.Context, status int, item *T, fields []string) error {
	doc, err := r.encode(c, jsonBuffer(r.sizeHint), item, fields)
	if err != nil {
		return err
	}
	return sendJSON(c, status, doc)
}

func getHandler[T any](r resource[T]) echo.HandlerFunc {
	return func(c echo.Context) error {
		q := c.QueryParams()
		if err := errs.OnlyKeys(q, "fields"); err != nil {
			return err
		}
		fields := query.Fields(q)
		checkFields := func() error {
			if fields == nil {
				return nil
			}
			// Only chassis and ports exist below this version.
			if err := microversion.RequireAtLeast(version(c), microversion.Fields); err != nil {
				return err
			}
			return r.checkFields(fields, version(c))
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
		return r.send(c, http.StatusOK, item, fields)
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
		return r.send(c, http.StatusCreated, item, nil)
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
		updated, err := r.update(c, patched, raw)
		if err != nil {
			return err
		}
		return r.send(c, http.StatusOK, updated, nil)
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

// nodeObject describes an object of a node (port, port group, volume
// connector or target) to nodeResource. Creation writes straight to the
// database: the unique indexes arbitrate between concurrent creators and
// nothing on the node has to change. Updates and deletions go to the
// node's conductor, which takes the lock and enforces the rules that
// depend on the node's state.
type nodeObject[T, A any] struct {
	// param is the path parameter naming an object, path the collection
	// below /v1.
	param, path      string
	find             func(c echo.Context, id string) (*T, error)
	checkFields      func(fields []string, v microversion.Version) error
	fieldsBeforeFind bool
	decode           func(body map[string]any, v microversion.Version) (*T, error)
	apply            func(item *T, ops []jsonpatch.Op, v microversion.Version) (*T, error)
	// newOwner and patchOwner find the node that a new and a patched
	// object name; resources answer an unknown node differently.
	newOwner, patchOwner func(c echo.Context, nodeUUID string) (*model.Node, error)
	// join, if set, completes a new object of node n from the body.
	join   func(c echo.Context, item *T, body map[string]any, n *model.Node) error
	insert func(ctx context.Context, item *T) error
	// ids gives an object's UUID, its node_uuid and the place of its node id.
	ids      func(item *T) (uuid, nodeUUID string, nodeID *int64)
	encode   func(c echo.Context, buf []byte, item *T, fields []string) ([]byte, error)
	sizeHint int
	// args wraps an object for the conductor's update and destroy calls.
	args func(item T) A
	// patchArgs, if set, wraps an update as the client's patch document
	// instead, which the conductor applies again to the object it reads
	// under the node lock: the object the API patched may be stale.
	patchArgs func(uuid string, patch []byte, v microversion.Version) A
	update    rpc.Method[A, T]
	destroy   rpc.Command[A]
}

func nodeResource[T, A any](s *Server, o nodeObject[T, A]) resource[T] {
	return resource[T]{
		param:            o.param,
		find:             o.find,
		checkFields:      o.checkFields,
		fieldsBeforeFind: o.fieldsBeforeFind,
		create: func(c echo.Context, body map[string]any) (*T, error) {
			item, err := o.decode(body, version(c))
			if err != nil {
				return nil, err
			}
			_, nodeUUID, nodeID := o.ids(item)
			n, err := o.newOwner(c, nodeUUID)
			if err != nil {
				return nil, err
			}
			*nodeID = n.ID
			if o.join != nil {
				if err := o.join(c, item, body, n); err != nil {
					return nil, err
				}
			}
			return item, o.insert(c.Request().Context(), item)
		},
		location: func(item *T) string {
			uuid, _, _ := o.ids(item)
			return "/v1/" + o.path + "/" + uuid
		},
		apply: func(c echo.Context, item *T, ops []jsonpatch.Op) (*T, error) { return o.apply(item, ops, version(c)) },
		update: func(c echo.Context, patched *T, raw []byte) (*T, error) {
			uuid, nodeUUID, nodeID := o.ids(patched)
			n, err := o.patchOwner(c, nodeUUID)
			if err != nil {
				return nil, err
			}
			*nodeID = n.ID
			ctx := c.Request().Context()
			args := o.args(*patched)
			if o.patchArgs != nil {
				args = o.patchArgs(uuid, raw, version(c))
			}
			updated, err := o.update.Call(ctx, s.rpc.ForNode(n), args)
			if err != nil {
				return nil, err
			}
			return &updated, nil
		},
		destroy: func(c echo.Context, item *T) error {
			_, _, nodeID := o.ids(item)
			ctx := c.Request().Context()
			n, err := s.store.GetNodeByID(ctx, *nodeID)
			if err != nil {
				return err
			}
			return o.destroy.Call(ctx, s.rpc.ForNode(n), o.args(*item))
		},
		encode:   o.encode,
		sizeHint: o.sizeHint,
	}
}

// catalogued is the encode of a resource of pkg/resource's catalogue: at
// the request's version and base URL, as its lists render it.
func catalogued[T any](s *Server, cat *catalogue.Catalogue[T]) func(echo.Context, []byte, *T, []string) ([]byte, error) {
	return func(c echo.Context, buf []byte, item *T, fields []string) ([]byte, error) {
		vw := catalogue.View[T]{Version: version(c), Base: s.baseURL(c), Fields: fields}
		return cat.AppendJSON(buf, &vw, item)
	}
}
