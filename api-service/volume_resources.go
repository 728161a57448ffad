package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/jsonpatch"
	"github.com/ferricbm/ferric/api-service/volume"
	"github.com/ferricbm/ferric/rpc"
)

// Creation writes straight to the database: the unique indexes arbitrate
// between concurrent creators and nothing on the node has to change.
// Updates and deletions go to the node's conductor, which takes the lock
// and enforces the power-state rule.

func (s *Server) getConnector(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	fields, err := volumeShowFields(c, volume.Connectors)
	if err != nil {
		return err
	}
	vc, err := s.findConnector(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volume.RenderConnector(s.baseURL(c), vc, fields))
}

func (s *Server) createConnector(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	vc, err := volume.DecodeConnector(body)
	if err != nil {
		return err
	}
	n, err := s.volumeOwner(c, vc.NodeUUID)
	if err != nil {
		return err
	}
	vc.NodeID = n.ID
	if err := s.store.CreateVolumeConnector(c.Request().Context(), vc); err != nil {
		return err
	}
	base := s.baseURL(c)
	c.Response().Header().Set(echo.HeaderLocation, base+"/v1/"+volume.Connectors.Path+"/"+vc.UUID)
	return c.JSON(http.StatusCreated, volume.RenderConnector(base, vc, nil))
}

func (s *Server) patchConnector(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	vc, err := s.findConnector(c, c.Param("id"))
	if err != nil {
		return err
	}
	ops, err := jsonpatch.Decode(raw)
	if err != nil {
		return err
	}
	patched, err := volume.ApplyConnector(vc, ops)
	if err != nil {
		return err
	}
	n, err := s.patchOwner(c, patched.NodeUUID)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	api, err := s.conductorFor(ctx, n.ConductorGroup, n.Driver, n.UUID)
	if err != nil {
		return asBadRequest(err)
	}
	updated, err := api.UpdateVolumeConnector(ctx, rpc.VolumeConnectorArgs{Connector: *patched})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volume.RenderConnector(s.baseURL(c), &updated, nil))
}

func (s *Server) deleteConnector(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	vc, err := s.findConnector(c, c.Param("id"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	n, err := s.store.GetNodeByID(ctx, vc.NodeID)
	if err != nil {
		return err
	}
	api, err := s.conductorFor(ctx, n.ConductorGroup, n.Driver, n.UUID)
	if err != nil {
		return asBadRequest(err)
	}
	if err := api.DestroyVolumeConnector(ctx, rpc.VolumeConnectorArgs{Connector: *vc}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) getTarget(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	fields, err := volumeShowFields(c, volume.Targets)
	if err != nil {
		return err
	}
	vt, err := s.findTarget(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volume.RenderTarget(s.baseURL(c), vt, fields))
}

func (s *Server) createTarget(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	vt, err := volume.DecodeTarget(body)
	if err != nil {
		return err
	}
	n, err := s.volumeOwner(c, vt.NodeUUID)
	if err != nil {
		return err
	}
	vt.NodeID = n.ID
	if err := s.store.CreateVolumeTarget(c.Request().Context(), vt); err != nil {
		return err
	}
	base := s.baseURL(c)
	c.Response().Header().Set(echo.HeaderLocation, base+"/v1/"+volume.Targets.Path+"/"+vt.UUID)
	return c.JSON(http.StatusCreated, volume.RenderTarget(base, vt, nil))
}

func (s *Server) patchTarget(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	raw, err := readBody(c)
	if err != nil {
		return err
	}
	vt, err := s.findTarget(c, c.Param("id"))
	if err != nil {
		return err
	}
	ops, err := jsonpatch.Decode(raw)
	if err != nil {
		return err
	}
	patched, err := volume.ApplyTarget(vt, ops)
	if err != nil {
		return err
	}
	n, err := s.patchOwner(c, patched.NodeUUID)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	api, err := s.conductorFor(ctx, n.ConductorGroup, n.Driver, n.UUID)
	if err != nil {
		return asBadRequest(err)
	}
	updated, err := api.UpdateVolumeTarget(ctx, rpc.VolumeTargetArgs{Target: *patched})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, volume.RenderTarget(s.baseURL(c), &updated, nil))
}

func (s *Server) deleteTarget(c echo.Context) error {
	if err := requireVolumeAPI(c); err != nil {
		return err
	}
	vt, err := s.findTarget(c, c.Param("id"))
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	n, err := s.store.GetNodeByID(ctx, vt.NodeID)
	if err != nil {
		return err
	}
	api, err := s.conductorFor(ctx, n.ConductorGroup, n.Driver, n.UUID)
	if err != nil {
		return asBadRequest(err)
	}
	if err := api.DestroyVolumeTarget(ctx, rpc.VolumeTargetArgs{Target: *vt}); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
