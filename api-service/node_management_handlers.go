package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/rpc"
)

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
	if err := errs.OnlyKeys(body, "boot_device", "persistent"); err != nil {
		return err
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
	return commandNode(s, c, rpc.SetBootDevice, func(n *model.Node) rpc.SetBootDeviceArgs {
		return rpc.SetBootDeviceArgs{NodeID: n.UUID, Device: device, Persistent: persistent}
	})
}

func (s *Server) injectNMI(c echo.Context) error {
	body, err := readObject(c, true)
	if err != nil {
		return err
	}
	if err := errs.OnlyKeys(body); err != nil {
		return err
	}
	return commandNode(s, c, rpc.InjectNMI, nodeArgs)
}

func (s *Server) setMaintenance(c echo.Context) error {
	body, err := readObject(c, true)
	if err != nil {
		return err
	}
	if err := errs.OnlyKeys(body, "reason"); err != nil {
		return err
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
	if err := errs.OnlyKeys(q, "node", "node_uuid"); err != nil {
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
