package conductor

import (
	"context"
	"errors"
	"fmt"
)

// startServices starts what the enabled drivers run inside the conductor
// (the pxe boot file server); on failure the ones started are stopped.
func (c *Conductor) startServices(ctx context.Context) error {
	services := c.drivers.Services()
	for i, s := range services {
		if err := s.StartService(ctx); err != nil {
			for _, started := range services[:i] {
				if serr := started.StopService(ctx); serr != nil {
					c.log.WithError(serr).Warn("Stopping a driver service failed")
				}
			}
			return fmt.Errorf("start driver service: %w", err)
		}
	}
	return nil
}

func (c *Conductor) stopServices(ctx context.Context) error {
	var errsOut []error
	for _, s := range c.drivers.Services() {
		if err := s.StopService(ctx); err != nil {
			errsOut = append(errsOut, fmt.Errorf("stop driver service: %w", err))
		}
	}
	return errors.Join(errsOut...)
}
