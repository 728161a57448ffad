package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/rpc"
)

func (s *Server) listVIFs(c echo.Context) error {
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	vifs, err := rpc.VIFList.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.NodeArgs{NodeID: n.UUID})
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
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.VIFAttach.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.VIFAttachArgs{NodeID: n.UUID, VIF: rpc.VIF{ID: id}}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) detachVIF(c echo.Context) error {
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.VIFDetach.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.VIFDetachArgs{NodeID: n.UUID, VIFID: c.Param("vif")}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
