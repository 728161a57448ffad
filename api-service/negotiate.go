package apiservice

import (
	"mime"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/resource/microversion"
)

const (
	keyVersion = "ferric.version"
	// keyStrippedJSON marks a request whose ".json" suffix was dropped.
	keyStrippedJSON = "ferric.stripped_json"
	jsonSuffix      = ".json"
)

// acceptJSON refuses requests that accept no JSON representation.
func acceptJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		accept := c.Request().Header.Values("Accept")
		if len(accept) == 0 || acceptsJSON(strings.Join(accept, ",")) {
			return next(c)
		}
		return &routingError{code: http.StatusNotAcceptable, description: "The server could not comply with the request since it is either malformed or otherwise incorrect."}
	}
}

func acceptsJSON(header string) bool {
	if strings.TrimSpace(header) == "" {
		return true
	}
	for _, item := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(item))
		if err != nil {
			continue
		}
		if params["q"] == "0" || params["q"] == "0.0" {
			continue
		}
		switch {
		case mt == "*/*", mt == "application/*", mt == "application/json", strings.HasSuffix(mt, "+json"):
			return true
		}
	}
	return false
}

// negotiate fixes the request's microversion and emits the version headers
// (docs/api.md §1.1-1.2).
func negotiate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		v, rangeKnown, err := microversion.Negotiate(c.Request().Header)
		h := c.Response().Header()
		if rangeKnown {
			microversion.SetRange(h)
		}
		if err != nil {
			if c.Request().URL.Path == "/" {
				return err
			}
			return &routingError{code: http.StatusNotAcceptable, description: err.Message}
		}
		microversion.SetVersion(h, v)
		c.Set(keyVersion, v)
		if u := c.Request().URL; microversion.StripsJSONSuffix(c.Request().Header, v) && strings.HasSuffix(u.Path, jsonSuffix) {
			u.Path = strings.TrimSuffix(u.Path, jsonSuffix)
			u.RawPath = strings.TrimSuffix(u.RawPath, jsonSuffix)
			c.Set(keyStrippedJSON, true)
		}
		return next(c)
	}
}

func version(c echo.Context) microversion.Version {
	if v, ok := c.Get(keyVersion).(microversion.Version); ok {
		return v
	}
	return microversion.Min
}
