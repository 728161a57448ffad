package apiservice

import (
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/microversion"
	"github.com/ferricbm/ferric/api-service/nodes"
	"github.com/ferricbm/ferric/api-service/present"
	"github.com/ferricbm/ferric/api-service/query"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var raidSince = microversion.V1(12)

func (s *Server) getNodeStates(c echo.Context) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	v := version(c)
	out := map[string]any{
		"console_enabled":        n.ConsoleEnabled,
		"last_error":             present.Str(n.LastError),
		"power_state":            present.Str(n.PowerState),
		"provision_state":        nodes.ProvisionStateAt(n.ProvisionState, v),
		"provision_updated_at":   present.Time(n.ProvisionUpdatedAt),
		"target_power_state":     present.Str(n.TargetPowerState),
		"target_provision_state": present.Str(n.TargetProvisionState),
	}
	if v.AtLeast(raidSince) {
		out["raid_config"] = present.Obj(n.RAIDConfig)
		out["target_raid_config"] = present.Obj(n.TargetRAIDConfig)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) statesLocation(c echo.Context) string {
	return s.baseURL(c) + "/v1/nodes/" + c.Param("node") + "/states"
}

func (s *Server) setPowerState(c echo.Context) error {
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	req, err := nodes.DecodePower(body, n, c.Param("node"), version(c))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if err := rpc.ChangeNodePowerState.Call(ctx, s.rpc.ForNode(n), rpc.ChangePowerStateArgs{NodeID: n.UUID, NewState: req.Target, Timeout: req.Timeout}); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, s.statesLocation(c))
	return c.NoContent(http.StatusAccepted)
}

func (s *Server) setProvisionState(c echo.Context) error {
	release, err := s.admitLargeBody(c)
	if err != nil {
		return err
	}
	defer release()
	body, drive, err := s.readProvisionBody(c)
	if err != nil {
		return err
	}
	defer drive.close()
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	req, err := nodes.DecodeProvision(body)
	if err != nil {
		return err
	}
	if _, err := req.Validate(n, version(c)); err != nil {
		return err
	}
	ctx := c.Request().Context()
	// Routed before a config drive is stored, so that a node no conductor
	// serves leaves nothing behind.
	api, err := s.rpc.ForNode(n).Resolve(ctx)
	if err != nil {
		return err
	}
	deploy := rpc.DeployArgs{NodeID: n.UUID, ConfigDrive: req.ConfigDrive}
	if drive != nil {
		// Validate let the drive through: the target deploys. The
		// conductor owns the stored drive from the call on.
		rd, err := drive.reader()
		if err != nil {
			return err
		}
		if deploy.ConfigDriveID, err = s.store.SaveConfigDrive(ctx, n.ID, rd); err != nil {
			return err
		}
		deploy.ConfigDrive = nil
	}
	if err := dispatchProvision(c, api, deploy, req); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, s.statesLocation(c))
	return c.NoContent(http.StatusAccepted)
}

// dispatchProvision sends a validated provision target to the conductor
// (docs/states.md §4); deploy is what a deploy or rebuild sends.
func dispatchProvision(c echo.Context, api rpc.Endpoint, deploy rpc.DeployArgs, req nodes.ProvisionRequest) error {
	ctx := c.Request().Context()
	nodeUUID := deploy.NodeID
	switch req.Target {
	case states.Active, string(states.EventDeploy):
		return rpc.DoNodeDeploy.Call(ctx, api, deploy)
	case states.Rebuild:
		deploy.Rebuild = true
		return rpc.DoNodeDeploy.Call(ctx, api, deploy)
	case states.Deleted, "undeploy":
		return rpc.DoNodeTearDown.Call(ctx, api, rpc.NodeArgs{NodeID: nodeUUID})
	case string(states.EventClean):
		return rpc.DoNodeClean.Call(ctx, api, rpc.CleanArgs{NodeID: nodeUUID, CleanSteps: req.CleanSteps})
	case string(states.EventRescue):
		return rpc.DoNodeRescue.Call(ctx, api, rpc.RescueArgs{NodeID: nodeUUID, RescuePassword: req.RescuePassword()})
	case string(states.EventUnrescue):
		return rpc.DoNodeUnrescue.Call(ctx, api, rpc.NodeArgs{NodeID: nodeUUID})
	default:
		return rpc.DoProvisioningAction.Call(ctx, api, rpc.ProvisioningActionArgs{NodeID: nodeUUID, Action: req.Target})
	}
}

func (s *Server) setMaintenance(c echo.Context) error {
	body, err := readObject(c, true)
	if err != nil {
		return err
	}
	var bad []string
	for k := range body {
		if k != "reason" {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errs.New(errs.KindInvalid, "Unexpected arguments: %s", strings.Join(bad, ", "))
	}
	var reason *string
	if r, ok := body["reason"]; ok && r != nil {
		str, isStr := r.(string)
		if !isStr {
			return errs.InvalidParameterValue("Invalid reason: expected a string")
		}
		if len(str) > model.MaxText {
			return errs.InvalidParameterValue("Invalid reason: longer than %d characters", model.MaxText)
		}
		reason = &str
	}
	return s.updateMaintenance(c, true, reason)
}

func (s *Server) unsetMaintenance(c echo.Context) error {
	return s.updateMaintenance(c, false, nil)
}

func (s *Server) updateMaintenance(c echo.Context, on bool, reason *string) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	// Only the change travels: the conductor applies it to the node it
	// reads under the lock, so a concurrent PATCH of another field stays.
	change := rpc.UpdateNodeArgs{NodeID: n.UUID, Maintenance: &rpc.MaintenanceChange{Enabled: on, Reason: reason}}
	if _, err := rpc.UpdateNode.Call(ctx, s.rpc.ForNode(n), change); err != nil {
		return err
	}
	return c.NoContent(http.StatusAccepted)
}

func (s *Server) validateNode(c echo.Context) error {
	return s.validate(c, c.Param("node"))
}

// validateNodeLegacy is GET /v1/nodes/validate?node=<ident>.
func (s *Server) validateNodeLegacy(c echo.Context) error {
	q := c.QueryParams()
	if err := query.Check(q, "node", "node_uuid"); err != nil {
		return err
	}
	id := q.Get("node")
	if id == "" {
		id = q.Get("node_uuid")
	}
	if id == "" {
		return errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: node")
	}
	return s.validate(c, id)
}

func (s *Server) validate(c echo.Context, id string) error {
	n, err := s.findNode(c, id)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	res, err := rpc.ValidateDriverInterfaces.Call(ctx, s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

func (s *Server) getBootDevice(c echo.Context) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	bd, err := rpc.GetBootDevice.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, bd)
}

func (s *Server) getSupportedBootDevices(c echo.Context) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	devs, err := rpc.GetSupportedBootDevices.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
	if err != nil {
		return err
	}
	if devs == nil {
		devs = []string{}
	}
	return c.JSON(http.StatusOK, map[string]any{"supported_boot_devices": devs})
}

func (s *Server) setBootDevice(c echo.Context) error {
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	var bad []string
	for k := range body {
		if k != "boot_device" && k != "persistent" {
			bad = append(bad, k)
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return errs.New(errs.KindInvalid, "Unexpected arguments: %s", strings.Join(bad, ", "))
	}
	device, ok := body["boot_device"].(string)
	if !ok || device == "" {
		return errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: boot_device")
	}
	persistent := false
	if p, given := body["persistent"]; given && p != nil {
		if persistent, err = nodes.AsBool("persistent", p); err != nil {
			return err
		}
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.SetBootDevice.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.SetBootDeviceArgs{NodeID: n.UUID, Device: device, Persistent: persistent}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// nodeVendorPassthru forwards <ANY> /v1/nodes/{n}/vendor_passthru?method=X
// to the node's driver; an async method answers 202, a sync one 200 with
// its return value.
func (s *Server) nodeVendorPassthru(c echo.Context) error {
	method, info, err := vendorCall(c)
	if err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	res, err := rpc.VendorPassthru.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.VendorPassthruArgs{NodeID: n.UUID, Method: method,
		HTTPMethod: c.Request().Method, Info: info})
	if err != nil {
		return err
	}
	return vendorResult(c, res)
}
