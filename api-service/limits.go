package apiservice

import (
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/pkg/errs"
)

const (
	keyBodyLimit = "ferric.body_limit"
	// provisionBodyLimit allows large config drives.
	provisionBodyLimit = 64 << 20
	// ramdiskBodyLimit bounds what anyone may send without credentials:
	// a heartbeat (a URL, a token, a version and a CA certificate) or a
	// deploy callback is a few kilobytes.
	ramdiskBodyLimit = 64 << 10
)

// bodyLimit picks the request body limit: provisioning carries config
// drives, the ramdisk's unauthenticated routes a few fields, everything
// else the configured maximum. A declared length past it is refused
// before anything is read.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		limit := s.cfg.API.MaxRequestBodySize
		if limit <= 0 {
			limit = 1 << 20
		}
		switch p := c.Request().URL.Path; {
		case strings.HasSuffix(p, "/states/provision"):
			limit = provisionBodyLimit
		case c.Get(keyRamdiskCallback) != nil, strings.HasPrefix(p, "/v1/heartbeat/"):
			limit = min(limit, ramdiskBodyLimit)
		}
		c.Set(keyBodyLimit, limit)
		if c.Request().ContentLength > limit {
			return tooLarge(limit)
		}
		return next(c)
	}
}

// maxQueryParams is net/url's limit: past it, url.ParseQuery returns no
// parameter at all, so a request would silently lose every filter and
// list everything.
const maxQueryParams = 10000

// limitQuery refuses a query string net/url would not parse whole: past
// its parameter limit, or with a pair it cannot decode (a ';' separator, a
// bad %-escape), which it would drop silently, filter and all.
func limitQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		raw := c.Request().URL.RawQuery
		if n := strings.Count(raw, "&") + 1; n > maxQueryParams {
			return errs.New(errs.KindInvalid, "The query string has %d parameters; at most %d are allowed.", n, maxQueryParams)
		}
		if _, err := url.ParseQuery(raw); err != nil {
			return errs.New(errs.KindInvalid, "The query string cannot be parsed: %s.", err)
		}
		return next(c)
	}
}

// requireJSONBody refuses a body that is not declared JSON with 415: a
// browser sends a cross-site POST without asking first only with a
// text/plain, form or multipart body. A request without a body needs no
// Content-Type.
func requireJSONBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			return next(c)
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get(echo.HeaderContentType)); err != nil || mt != echo.MIMEApplicationJSON {
			return &routingError{code: http.StatusUnsupportedMediaType,
				description: "The request body must be JSON, sent with Content-Type: application/json."}
		}
		return next(c)
	}
}
