package apiservice

import (
	"net/http"
	"sort"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/nodes"
	"github.com/ferricbm/ferric/pkg/errs"
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

func (s *Server) injectNMI(c echo.Context) error {
	body, err := readObject(c, true)
	if err != nil {
		return err
	}
	if err := onlyKeys(body); err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.InjectNMI.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
