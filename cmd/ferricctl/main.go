// Command ferricctl is the command-line client of the Ferric Bare Metal
// API, with the commands and options of "openstack baremetal ...":
//
//	ferricctl node list|show|create|set|delete|manage|provide|deploy|undeploy
//	ferricctl node power on|off
//	ferricctl port create
//	ferricctl volume connector create|list|show|set|unset|delete
//	ferricctl volume target create|list|show|set|unset|delete
//
// Run "ferricctl --help" for the connection settings (OS_ENDPOINT, ...).
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ferricbm/ferric/cmd/ferricctl/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Execute(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
