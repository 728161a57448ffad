package apiservice

import (
	"bytes"
	"encoding/json"

	"github.com/labstack/echo/v4"
)

// sendJSON writes an already encoded (compact) JSON document as c.JSON
// would write the value it encodes: with a trailing newline, and indented
// when the client asked for ?pretty.
func (s *Server) sendJSON(c echo.Context, status int, doc []byte) error {
	doc = append(doc, '\n')
	if _, pretty := c.QueryParams()["pretty"]; pretty || s.echo.Debug {
		var out bytes.Buffer
		if err := json.Indent(&out, doc, "", "  "); err != nil {
			return err
		}
		doc = out.Bytes()
	}
	return c.JSONBlob(status, doc)
}
