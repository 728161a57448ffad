package apiservice

import (
	"github.com/labstack/echo/v4"

	"github.com/ferricbm/ferric/api-service/policy"
	"github.com/ferricbm/ferric/pkg/errs"
)

// rule gates a route by a policy rule; the route table names one for
// every route but API discovery. The ramdisk's callbacks are exempt.
func (s *Server) rule(name string) echo.MiddlewareFunc {
	if !s.policy.Known(name) {
		s.unknownRules = append(s.unknownRules, name)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if err := s.nodeTarget(c); err != nil {
				return err
			}
			if err := s.authorize(c, name); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// nodeTarget makes the node a route names the policy target of a
// project-scoped token: its owner and lessee, which the project rules
// compare with the token's project. A node the project may not even read
// is not found, as in Ironic, so that other projects' nodes stay unseen.
// System-scoped credentials need no target.
func (s *Server) nodeTarget(c echo.Context) error {
	id, creds := c.Param("node"), credentials(c)
	if id == "" || creds.ProjectID == "" || c.Get(keyRamdiskCallback) != nil {
		return nil
	}
	n, err := s.findNode(c, id)
	if err != nil {
		return err
	}
	t := nodePolicyTarget(n)
	if !s.policy.Allowed("baremetal:node:get", creds, t) {
		return errs.NodeNotFound(id)
	}
	c.Set(keyPolicyTarget, t)
	return nil
}

// authorize checks the request's credentials against a rule, for rules
// that depend on more than the route (a PATCH of a node's driver_info).
func (s *Server) authorize(c echo.Context, rule string) error {
	if c.Get(keyRamdiskCallback) != nil {
		return nil
	}
	t, _ := c.Get(keyPolicyTarget).(policy.Target)
	return s.policy.Authorize(rule, credentials(c), t)
}

// credentials are the request's, none when it was not authenticated.
func credentials(c echo.Context) policy.Credentials {
	if creds, ok := c.Get(keyCredentials).(*policy.Credentials); ok {
		return *creds
	}
	return noCredentials
}

// listProject is the project whose nodes a list shows, nil when the
// credentials may list every node (baremetal:node:list_all).
func (s *Server) listProject(c echo.Context) (*string, error) {
	creds := credentials(c)
	if s.policy.Allowed("baremetal:node:list_all", creds, nil) {
		return nil, nil
	}
	if creds.ProjectID == "" {
		return nil, s.policy.Authorize("baremetal:node:list_all", creds, nil)
	}
	return &creds.ProjectID, nil
}
