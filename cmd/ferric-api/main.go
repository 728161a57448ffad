// Command ferric-api serves the Bare Metal API and sends node operations to
// conductors over RPC (normally AMQP). It never changes the database
// schema: run `ferric dbsync upgrade` first.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ferricbm/ferric/cmd/internal/service"
)

func main() {
	fs := flag.NewFlagSet("ferric-api", flag.ExitOnError)
	configPath := service.ConfigFlag(fs, os.Getenv)
	_ = fs.Parse(os.Args[1:])
	if err := run(*configPath); err != nil {
		fmt.Fprintln(os.Stderr, "ferric-api:", err)
		os.Exit(1)
	}
}

func run(configPath string) error {
	cfg, log, err := service.Load(configPath, service.APIOnly, os.Environ())
	if err != nil {
		return err
	}
	service.LogStartup(log, service.APIOnly, cfg, configPath)
	return service.Run(service.APIOnly, cfg, log, os.Getenv)
}
