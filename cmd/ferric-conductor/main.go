// Command ferric-conductor runs one conductor: it registers in the
// database, takes its share of the nodes by the hash ring, serves RPC
// (normally over AMQP) and runs the periodic tasks. It never changes the
// database schema: run `ferric dbsync upgrade` first.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ferricbm/ferric/cmd/internal/service"
)

func main() {
	fs := flag.NewFlagSet("ferric-conductor", flag.ExitOnError)
	configPath := service.ConfigFlag(fs, os.Getenv)
	_ = fs.Parse(os.Args[1:])
	if err := run(*configPath); err != nil {
		fmt.Fprintln(os.Stderr, "ferric-conductor:", err)
		os.Exit(1)
	}
}

func run(configPath string) error {
	cfg, log, err := service.Load(configPath, service.ConductorOnly, os.Environ())
	if err != nil {
		return err
	}
	service.LogStartup(log, service.ConductorOnly, cfg, configPath)
	return service.Run(service.ConductorOnly, cfg, log, os.Getenv)
}
