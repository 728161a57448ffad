package apiservice

import "github.com/labstack/echo/v4"

// AddPanickingRoute serves path with a handler that panics with value, so
// a test can see what a handler bug costs a client and the server.
func (s *Server) AddPanickingRoute(path string, value any) {
	s.echo.GET(path, func(echo.Context) error { panic(value) })
}

// NodeUpdateRules are the rules a PATCH from before to after must pass.
var NodeUpdateRules = nodeUpdateRules
