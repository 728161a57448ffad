package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/pkg/states"
	"github.com/ferricbm/ferric/rpc"
)

var raidSince = microversion.V1(12)

func (s *Server) getNodeStates(c echo.Context) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	s.redactNode(c, n)
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
	case string(states.Active), string(states.EventDeploy):
		return rpc.DoNodeDeploy.Call(ctx, api, deploy)
	case string(states.Rebuild):
		deploy.Rebuild = true
		return rpc.DoNodeDeploy.Call(ctx, api, deploy)
	case string(states.Deleted), "undeploy":
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
