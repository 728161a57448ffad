package apiservice

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/resource/events"
	"github.com/ferricbm/ferric/pkg/resource/microversion"
	"github.com/ferricbm/ferric/pkg/resource/portgroups"
	"github.com/ferricbm/ferric/pkg/resource/present"
)

type versionDoc struct {
	ID         string         `json:"id"`
	Links      []present.Link `json:"links"`
	Status     string         `json:"status"`
	MinVersion string         `json:"min_version"`
	Version    string         `json:"version"`
}

func (s *Server) versionDoc(c echo.Context) versionDoc {
	return versionDoc{
		ID:         "v1",
		Links:      []present.Link{{Href: s.baseURL(c) + "/v1/", Rel: "self"}},
		Status:     "CURRENT",
		MinVersion: microversion.Min.String(),
		Version:    microversion.Max.String(),
	}
}

func (s *Server) getRoot(c echo.Context) error {
	d := s.versionDoc(c)
	return c.JSON(http.StatusOK, map[string]any{
		"name":            "OpenStack Ironic API",
		"description":     "Ferric speaks the OpenStack Bare Metal API v1 to provision physical servers.",
		"default_version": d,
		"versions":        []versionDoc{d},
	})
}

// collectionLink is the [self, bookmark] pair of a controller in /v1; the
// hrefs end with "/".
func collectionLink(base, name string) []present.Link {
	return present.Links(base, name+"/")
}

// getV1 is the resource index; collections newer than the negotiated
// version are left out (docs/api.md §1.3).
func (s *Server) getV1(c echo.Context) error {
	base := s.baseURL(c)
	doc := map[string]any{
		"id": "v1",
		"links": []present.Link{
			{Href: base + "/v1/", Rel: "self"},
			{Href: "https://docs.openstack.org/ironic/latest/contributor/webapi.html", Rel: "describedby", Type: "text/html"},
		},
		"media_types": map[string]string{
			"base": "application/json",
			"type": "application/vnd.openstack.ironic.v1+json",
		},
		"chassis": collectionLink(base, "chassis"),
		"nodes":   collectionLink(base, "nodes"),
		"ports":   collectionLink(base, "ports"),
		"drivers": collectionLink(base, "drivers"),
		"version": s.versionDoc(c),
	}
	if version(c).AtLeast(portgroups.Since) {
		doc["portgroups"] = collectionLink(base, "portgroups")
	}
	if version(c).AtLeast(microversion.RamdiskAPI) {
		doc["lookup"] = collectionLink(base, "lookup")
		doc["heartbeat"] = collectionLink(base, "heartbeat")
	}
	if version(c).AtLeast(microversion.VolumeAPI) {
		doc["volume"] = collectionLink(base, "volume")
	}
	if version(c).AtLeast(microversion.ConductorsAPI) {
		doc["conductors"] = collectionLink(base, "conductors")
	}
	if version(c).AtLeast(microversion.Allocations) {
		doc["allocations"] = collectionLink(base, "allocations")
	}
	if version(c).AtLeast(events.Since) {
		doc["events"] = collectionLink(base, "events")
	}
	return c.JSON(http.StatusOK, doc)
}

func malformedURI(echo.Context) error {
	return errMalformedURI
}
