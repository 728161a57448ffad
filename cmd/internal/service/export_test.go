package service

import (
	"context"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/config"
)

var TuneGC = tuneGC

var APIServer = apiServer

// RunUntil is Run until ctx ends, leaving signals and GOGC alone.
func RunUntil(ctx context.Context, role Role, cfg config.Config, log *logrus.Logger) error {
	return run(ctx, func() {}, role, cfg, log, func(string) string { return "100" })
}
