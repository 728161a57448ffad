package apiservice

import (
	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/policy"
	"github.com/ferricbm/ferric/pkg/model"
)

// redactionColumns are the columns redaction reads, loaded even when a
// request asks for other fields only.
var redactionColumns = []string{"owner", "lessee"}

// redacted is what stands for a field the credentials may not read.
func redacted(rule string) string { return "** Redacted - requires " + rule + " permission. **" }

// redactNode hides what Ironic's baremetal:node:get:<field> rules keep from
// those below baremetal:node:get:filter_threshold: by default the node's
// lessee project does not see driver_info, driver_internal_info,
// last_error (they name BMCs, hosts and addresses of the owner's
// infrastructure) nor reservation (a conductor's host name). n is changed
// in place; it must be a copy of the request's own.
func (s *Server) redactNode(c echo.Context, n *model.Node) {
	creds := credentials(c)
	if s.policy.Allowed("baremetal:node:get:filter_threshold", creds, nil) {
		return
	}
	t := nodePolicyTarget(n)
	allowed := func(rule string) bool { return s.policy.Allowed(rule, creds, t) }
	if rule := "baremetal:node:get:driver_info"; !allowed(rule) {
		n.DriverInfo = model.JSONObject{"content": redacted(rule)}
	}
	if rule := "baremetal:node:get:driver_internal_info"; !allowed(rule) {
		n.DriverInternalInfo = model.JSONObject{"content": redacted(rule)}
	}
	if rule := "baremetal:node:get:last_error"; !allowed(rule) && n.LastError != nil {
		msg := redacted(rule)
		n.LastError = &msg
	}
	if rule := "baremetal:node:get:reservation"; !allowed(rule) && n.Reservation != nil {
		msg := redacted(rule)
		n.Reservation = &msg
	}
}

// nodePolicyTarget is the node as the project rules see it: its owner and
// lessee.
func nodePolicyTarget(n *model.Node) policy.Target {
	t := policy.Target{}
	if n.Owner != nil {
		t["node.owner"] = *n.Owner
	}
	if n.Lessee != nil {
		t["node.lessee"] = *n.Lessee
	}
	return t
}
