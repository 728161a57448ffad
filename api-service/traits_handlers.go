package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/nodes"
	"github.com/ferricbm/ferric/rpc"
)

// traitsNode resolves the node of a traits endpoint.
func (s *Server) traitsNode(c echo.Context) (*model.Node, error) {
	if err := errs.OnlyKeys(c.QueryParams()); err != nil {
		return nil, err
	}
	return s.findNode(c, c.Param("node"))
}

func (s *Server) listTraits(c echo.Context) error {
	n, err := s.traitsNode(c)
	if err != nil {
		return err
	}
	traits := []string(n.Traits)
	if traits == nil {
		traits = []string{}
	}
	return c.JSON(http.StatusOK, map[string]any{"traits": traits})
}

// changeTraits sends a traits change to the node's conductor, which
// applies it under the node lock.
func (s *Server) changeTraits(c echo.Context, n *model.Node, args rpc.NodeTraitsArgs, remove bool) error {
	ctx := c.Request().Context()
	args.NodeID = n.UUID
	change := rpc.AddNodeTraits
	if remove {
		change = rpc.RemoveNodeTraits
	}
	if err := change.Call(ctx, s.rpc.ForNode(n), args); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) setTraits(c echo.Context) error {
	n, err := s.traitsNode(c)
	if err != nil {
		return err
	}
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	traits, err := nodes.DecodeTraits(body)
	if err != nil {
		return err
	}
	return s.changeTraits(c, n, rpc.NodeTraitsArgs{Traits: traits, Replace: true}, false)
}

func (s *Server) addTrait(c echo.Context) error {
	n, err := s.traitsNode(c)
	if err != nil {
		return err
	}
	if err := nodes.CheckTrait(c.Param("trait")); err != nil {
		return err
	}
	return s.changeTraits(c, n, rpc.NodeTraitsArgs{Traits: []string{c.Param("trait")}}, false)
}

func (s *Server) removeTraits(c echo.Context) error {
	n, err := s.traitsNode(c)
	if err != nil {
		return err
	}
	return s.changeTraits(c, n, rpc.NodeTraitsArgs{}, true)
}

func (s *Server) removeTrait(c echo.Context) error {
	n, err := s.traitsNode(c)
	if err != nil {
		return err
	}
	return s.changeTraits(c, n, rpc.NodeTraitsArgs{Traits: []string{c.Param("trait")}}, true)
}
