package apiservice

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/ident"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/secrets"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

// Heartbeat body keys and the version each is accepted from.
// agent_verify_ca, Ironic's from 1.68, is taken at every version: Ferric
// serves older ones, and an agent serving TLS must be able to send it.
var (
	agentVersionSince = microversion.V1(36)
	agentStatusSince  = microversion.V1(72)
)

// lookupNotFound is the same for "no such node" and "not in a state where
// an agent is expected", so lookups reveal nothing about other nodes.
func lookupNotFound() error { return errs.New(errs.KindNotFound, "Resource could not be found.") }

// lookup is GET /v1/lookup: the deploy ramdisk finds its node by MAC
// addresses or UUID and receives its configuration and agent token.
func (s *Server) lookup(c echo.Context) error {
	q := c.QueryParams()
	if err := errs.OnlyKeys(q, "addresses", "node_uuid"); err != nil {
		return err
	}
	var macs []string
	for _, a := range query.List(q, "addresses") {
		if m, ok := ident.NormalizeMAC(a); ok {
			macs = append(macs, m)
		}
	}
	nodeUUID := q.Get("node_uuid")
	if len(macs) == 0 && nodeUUID == "" {
		return errs.InvalidParameterValue("At least one of 'addresses' and 'node_uuid' parameters is required")
	}
	ctx := c.Request().Context()
	var n *model.Node
	if nodeUUID != "" {
		u, ok := ident.CanonicalUUID(nodeUUID)
		if !ok {
			return errs.InvalidParameterValue("Expected a UUID for node_uuid but received %s.", nodeUUID)
		}
		found, err := s.store.GetNode(ctx, u)
		if errs.Is(err, errs.KindNodeNotFound) {
			return lookupNotFound()
		}
		if err != nil {
			return err
		}
		n = found
	} else {
		found, err := s.nodeByAddresses(c, macs)
		if err != nil {
			return err
		}
		n = found
	}
	if s.cfg.API.RestrictLookup && !states.LookupAllowed(n.State()) {
		return lookupNotFound()
	}
	withToken, err := rpc.GetNodeWithToken.Call(ctx, s.rpc.ForNode(n), rpc.LookupArgs{NodeID: n.UUID, SourceAddress: peerHost(c.Request())})
	if err != nil {
		return err
	}
	node := withToken.Node
	return c.JSON(http.StatusOK, map[string]any{
		"node": map[string]any{
			"uuid":                 node.UUID,
			"properties":           present.Obj(node.Properties),
			"instance_info":        secrets.MaskInstanceInfo(present.Obj(node.InstanceInfo)),
			"driver_internal_info": secrets.Mask(present.Obj(node.DriverInternalInfo)),
			"links":                present.Links(s.baseURL(c), "nodes/"+node.UUID),
		},
		"config": map[string]any{
			"heartbeat_timeout":    s.cfg.API.RamdiskHeartbeatTimeout,
			"agent_token":          withToken.AgentToken,
			"agent_token_required": true,
			"metrics": map[string]any{"backend": "noop", "prepend_host": false, "prepend_uuid": false,
				"prepend_host_reverse": true, "global_prefix": nil},
			"metrics_statsd": map[string]any{"statsd_host": "localhost", "statsd_port": 8125},
		},
	})
}

// nodeByAddresses finds the one node owning ports with these MACs; MACs
// of several nodes identify none.
func (s *Server) nodeByAddresses(c echo.Context, macs []string) (*model.Node, error) {
	ctx := c.Request().Context()
	owner := ""
	for _, m := range macs {
		p, err := s.store.GetPortByAddress(ctx, m)
		if errs.Is(err, errs.KindPortNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if owner != "" && owner != p.NodeUUID {
			return nil, lookupNotFound()
		}
		owner = p.NodeUUID
	}
	if owner == "" {
		return nil, lookupNotFound()
	}
	n, err := s.store.GetNode(ctx, owner)
	if errs.Is(err, errs.KindNodeNotFound) {
		return nil, lookupNotFound()
	}
	return n, err
}

// heartbeat is POST /v1/heartbeat/{node}: the ramdisk reports where it
// listens; the owning conductor checks its token and acts on it.
func (s *Server) heartbeat(c echo.Context) error {
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return err
	}
	body, err := readFields(c, false)
	if err != nil {
		return err
	}
	v := version(c)
	allowed := []string{"callback_url", "agent_token", "agent_verify_ca"}
	if v.AtLeast(agentVersionSince) {
		allowed = append(allowed, "agent_version")
	}
	if v.AtLeast(agentStatusSince) {
		allowed = append(allowed, "agent_status", "agent_status_message")
	}
	if err := errs.OnlyKeys(body, allowed...); err != nil {
		return err
	}
	callbackURL, err := stringField(body, "callback_url")
	if err != nil {
		return err
	}
	if _, given := body["callback_url"]; !given {
		return errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: callback_url")
	}
	if callbackURL != "" {
		u, perr := url.Parse(callbackURL)
		if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errs.InvalidParameterValue("Invalid callback_url %s: an http or https URL is required", callbackURL)
		}
	}
	// A missing token is refused by the conductor, which counts a node's
	// refused heartbeats and reports them in last_error.
	token, err := stringField(body, "agent_token")
	if err != nil {
		return err
	}
	agentVersion, err := stringField(body, "agent_version")
	if err != nil {
		return err
	}
	verifyCA, err := stringField(body, "agent_verify_ca")
	if err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := rpc.Heartbeat.Call(ctx, s.rpc.ForNode(n), rpc.HeartbeatArgs{NodeID: n.UUID, SourceAddress: peerHost(c.Request()), CallbackURL: callbackURL,
		AgentVersion: agentVersion, AgentToken: token, AgentVerifyCA: verifyCA}); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}
