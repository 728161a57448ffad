package apiservice

import (
	"context"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/rpc"
)

const (
	headerRequestID       = "Openstack-Request-Id"
	headerLegacyRequestID = "X-Openstack-Request-Id"

	keyRequestID       = "ferric.request_id"
	keyGlobalRequestID = "ferric.global_request_id"
)

// requestID names every request with a fresh req-<uuid4> in both response
// headers, the request context (so RPC carries it to the conductor) and
// the logs. A caller's own id in X-Openstack-Request-Id ("req-" and a
// UUID) is kept beside it as the global request id, as Ironic does, so
// the caller's logs and Ferric's can be joined; anything else there is
// ignored. The local id is always Ferric's own: a caller choosing it could
// make its requests' lines indistinguishable from another's.
//
// The context handed on is not cancelled when the client goes away: a
// request runs to its end, as in Ironic, bounded by the RPC timeout. A
// cancellable context would cost every SQL statement a goroutine in
// database/sql and two hand-offs to the MySQL driver's watcher, a large
// share of a node GET on two cores.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := "req-" + uuid.NewString()
		c.Set(keyRequestID, id)
		h := c.Response().Header()
		h.Set(headerRequestID, id)
		h.Set(headerLegacyRequestID, id)
		r := c.Request()
		ctx := rpc.WithRequestID(context.WithoutCancel(r.Context()), id)
		if global := r.Header.Get(headerLegacyRequestID); logging.ValidRequestID(global) {
			c.Set(keyGlobalRequestID, global)
			ctx = logging.ContextWithGlobalRequestID(ctx, global)
		}
		c.SetRequest(r.WithContext(ctx))
		return next(c)
	}
}
