package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/present"
	"github.com/ferricbm/ferric/rpc"
)

func (s *Server) biosSetting(c echo.Context, n *model.Node, b rpc.BIOSSetting) map[string]any {
	return map[string]any{"name": b.Name, "value": b.Value,
		"links": present.Links(s.baseURL(c), "nodes/"+n.UUID+"/bios/"+b.Name)}
}

func (s *Server) listBIOS(c echo.Context) error {
	n, settings, err := askNode(s, c, rpc.GetBIOSSettings)
	if err != nil {
		return err
	}
	out := make([]map[string]any, len(settings))
	for i, b := range settings {
		out[i] = s.biosSetting(c, n, b)
	}
	return c.JSON(http.StatusOK, map[string]any{"bios": out})
}

func (s *Server) getBIOS(c echo.Context) error {
	n, settings, err := askNode(s, c, rpc.GetBIOSSettings)
	if err != nil {
		return err
	}
	name := c.Param("setting")
	for _, b := range settings {
		if b.Name == name {
			return c.JSON(http.StatusOK, map[string]any{name: s.biosSetting(c, n, b)})
		}
	}
	return errs.New(errs.KindNotFound, "Node %s doesn't have a BIOS setting '%s'", n.UUID, name)
}
