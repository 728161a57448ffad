package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/resource/events"
)

// postEvents serves POST /v1/events (1.54): Neutron telling that ports
// were bound, unbound or deleted. As in Ironic, none of the network
// interfaces (flat, noop) acts on them; each is logged, so that an
// operator can line Neutron's view up with the nodes'.
func (s *Server) postEvents(c echo.Context) error {
	body, err := readObject(c, false)
	if err != nil {
		return err
	}
	evs, err := events.Decode(body)
	if err != nil {
		return err
	}
	for _, e := range evs {
		s.log.WithFields(logrus.Fields{"request_id": c.Get(keyRequestID), "event": e.Event, "port_id": e.PortID,
			"mac_address": e.MACAddress, "status": e.Status}).Debug("Received external event")
	}
	return c.NoContent(http.StatusNoContent)
}
