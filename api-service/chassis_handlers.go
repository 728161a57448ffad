package apiservice

import (
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/list"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/resource/chassis"
	"github.com/ferricbm/ferric/pkg/resource/filter"
	"github.com/ferricbm/ferric/pkg/resource/jsonpatch"
)

// findChassis loads a chassis named by its UUID, the only identifier a
// chassis has.
func (s *Server) findChassis(c echo.Context, id string) (*model.Chassis, error) {
	return byUUID(c, id, s.store.GetChassis, expectedUUID)
}

// nodeChassis checks that the chassis a node is put in exists; an unknown
// one is the client's error (400).
func (s *Server) nodeChassis(c echo.Context, uuid *string) error {
	if uuid == nil {
		return nil
	}
	_, err := s.store.GetChassis(c.Request().Context(), *uuid)
	return referenced(err)
}

func (s *Server) listChassis(c echo.Context) error       { return s.chassisList(c, false) }
func (s *Server) listChassisDetail(c echo.Context) error { return s.chassisList(c, true) }

func (s *Server) chassisList(c echo.Context, detailPath bool) error {
	return serveList(s, c, list.Spec[model.Chassis]{Catalogue: chassis.Resource, Dialect: list.Classic,
		Collection: "chassis", Path: listScope{}.path("chassis", detailPath), DetailPath: detailPath,
		Prepare: func(url.Values) (list.Fetch[model.Chassis], error) {
			return func(page db.Page, _, columns []string, _ []filter.Condition) (list.Page[model.Chassis], error) {
				items, err := s.store.ListChassis(c.Request().Context(), page, columns)
				return list.Page[model.Chassis]{Items: items}, err
			}, nil
		}})
}

// chassisResource describes chassis to the generic handlers: the API
// writes them itself, no conductor manages a chassis.
func (s *Server) chassisResource() resource[model.Chassis] {
	return resource[model.Chassis]{
		param:       "chassis",
		find:        s.findChassis,
		checkFields: chassis.Resource.CheckOutputFields,
		create: func(c echo.Context, body map[string]any) (*model.Chassis, error) {
			ch, err := chassis.DecodeCreate(body)
			if err != nil {
				return nil, err
			}
			return ch, s.store.CreateChassis(c.Request().Context(), ch)
		},
		location: func(ch *model.Chassis) string { return "/v1/chassis/" + ch.UUID },
		apply: func(_ echo.Context, ch *model.Chassis, ops []jsonpatch.Op) (*model.Chassis, error) {
			return chassis.Apply(ch, ops)
		},
		update: func(c echo.Context, patched *model.Chassis, _ []byte) (*model.Chassis, error) {
			return patched, s.store.SaveChassis(c.Request().Context(), patched)
		},
		destroy: func(c echo.Context, ch *model.Chassis) error {
			return s.store.DestroyChassis(c.Request().Context(), ch.UUID)
		},
		encode:   catalogued(s, chassis.Resource),
		sizeHint: chassis.Resource.SizeHint,
	}
}

func (s *Server) listChassisNodes(c echo.Context) error       { return s.chassisNodes(c, false) }
func (s *Server) listChassisNodesDetail(c echo.Context) error { return s.chassisNodes(c, true) }

// chassisNodes serves /v1/chassis/{c}/nodes[/detail]: the node list
// scoped to an existing chassis.
func (s *Server) chassisNodes(c echo.Context, detailPath bool) error {
	ch, err := s.findChassis(c, c.Param("chassis"))
	if err != nil {
		return err
	}
	if err := s.chassisSeen(c, ch.UUID); err != nil {
		return err
	}
	return s.nodeListIn(c, detailPath, ch.UUID)
}

// chassisSeen answers as if the chassis did not exist to those who may not
// read chassis (project-scoped tokens) unless it holds one of the nodes
// they may list, whose chassis_uuid tells of it anyway: that the list of
// a chassis is empty must not tell them it exists.
func (s *Server) chassisSeen(c echo.Context, uuid string) error {
	if s.policy.Allowed("baremetal:chassis:get", credentials(c), nil) {
		return nil
	}
	project, err := s.listProject(c)
	if err != nil || project == nil {
		return err
	}
	held, err := s.store.ListNodes(c.Request().Context(), db.NodeFilter{Match: []filter.Condition{{Column: "chassis_uuid", Value: uuid}}, Project: project},
		db.Page{Limit: 1}, []string{"uuid"})
	if err != nil {
		return err
	}
	if len(held) == 0 {
		return db.ChassisNotFound(uuid)
	}
	return nil
}
