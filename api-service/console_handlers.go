package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/rpc"
)

func (s *Server) getConsole(c echo.Context) error {
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	off := map[string]any{"console_enabled": false, "console_info": nil}
	if !n.ConsoleEnabled {
		return c.JSON(http.StatusOK, off)
	}
	ctx := c.Request().Context()
	info, err := rpc.GetConsoleInformation.Call(ctx, s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
	if errs.Is(err, errs.KindInvalid) {
		// Stopped since the node was read.
		return c.JSON(http.StatusOK, off)
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"console_enabled": true, "console_info": info})
}

func (s *Server) setConsole(c echo.Context) error {
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	if err := errs.OnlyKeys(body, "enabled"); err != nil {
		return err
	}
	raw, ok := body["enabled"]
	if !ok || raw == nil {
		return errs.New(errs.KindMissingParameterValue, "Missing mandatory parameter: enabled")
	}
	enabled, err := nodes.AsBool("enabled", raw)
	if err != nil {
		return errs.InvalidParameterValue("Invalid enabled: expected a boolean")
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.SetConsoleMode.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.SetConsoleModeArgs{NodeID: n.UUID, Enabled: enabled}); err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, s.statesLocation(c)+"/console")
	return c.NoContent(http.StatusAccepted)
}
