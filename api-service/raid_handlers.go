package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/rpc"
)

// raidNotFound re-codes "this driver has no RAID" as 404: RAID is optional
// and most hardware types lack it (docs/api.md §5.4).
func raidNotFound(err error) error {
	if e, ok := errs.As(err); ok && e.Kind == errs.KindUnsupportedDriverExtension {
		return e.WithStatus(http.StatusNotFound)
	}
	return err
}

// setRAIDConfig is PUT .../states/raid: the body is the whole target RAID
// configuration.
func (s *Server) setRAIDConfig(c echo.Context) error {
	if err := microversion.RequireAtLeast(version(c), microversion.RAIDConfig); err != nil {
		return err
	}
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	n, err := s.findNode(c, c.Param("node"))
	if err != nil {
		return err
	}
	if err := rpc.SetTargetRAIDConfig.Call(c.Request().Context(), s.rpc.ForNode(n), rpc.SetTargetRAIDConfigArgs{NodeID: n.UUID, Config: body}); err != nil {
		return raidNotFound(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// raidLogicalDiskProperties is GET /v1/drivers/{name}/raid/logical_disk_properties.
func (s *Server) raidLogicalDiskProperties(c echo.Context) error {
	if err := microversion.RequireAtLeast(version(c), microversion.RAIDConfig); err != nil {
		return err
	}
	props, err := askDriver(s, c, rpc.GetRAIDLogicalDiskProperties)
	if err != nil {
		return raidNotFound(err)
	}
	return c.JSON(http.StatusOK, props)
}
