package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/rpc"
)

func (s *Server) listVIFs(c echo.Context) error {
	_, vifs, err := askNode(s, c, rpc.VIFList)
	if err != nil {
		return err
	}
	if vifs == nil {
		vifs = []rpc.VIF{}
	}
	return c.JSON(http.StatusOK, map[string]any{"vifs": vifs})
}

func (s *Server) attachVIF(c echo.Context) error {
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	if err := errs.OnlyKeys(body, "id"); err != nil {
		return err
	}
	raw, ok := body["id"]
	if !ok {
		return errs.New(errs.KindInvalid, "Schema error for vif: 'id' is a required property")
	}
	id, ok := raw.(string)
	if !ok || id == "" {
		return errs.InvalidParameterValue("Invalid VIF id: expected a non-empty string")
	}
	return commandNode(s, c, rpc.VIFAttach, func(n *model.Node) rpc.VIFAttachArgs {
		return rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: id}}
	})
}

func (s *Server) detachVIF(c echo.Context) error {
	return commandNode(s, c, rpc.VIFDetach, func(n *model.Node) rpc.VIFDetachArgs {
		return rpc.VIFDetachArgs{NodeID: n.UUID, VIFID: c.Param("vif")}
	})
}
