// Command ferric is Ferric in one process and its admin commands:
//
//	ferric serve [--config FILE]            API and conductor in one process
//	ferric dbsync upgrade [--config FILE]   upgrade the database schema
//	ferric dbsync version [--config FILE]   print the schema version
//
// --config defaults to $FERRIC_CONFIG; without a file the embedded defaults
// apply (SQLite under ./var, in-process RPC, API on 127.0.0.1:6385), each
// option overridable with FERRIC_<SECTION>_<OPTION>.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ferricbm/ferric/cmd/internal/service"
	"github.com/ferricbm/ferric/db"
)

const usage = `usage:
  ferric serve [--config FILE]
  ferric dbsync upgrade [--config FILE]
  ferric dbsync version [--config FILE]
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "ferric:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("a command is required")
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "dbsync":
		if len(args) < 2 {
			fmt.Fprint(stderr, usage)
			return fmt.Errorf("dbsync needs upgrade or version")
		}
		return dbsync(args[1], args[2:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func serve(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("ferric serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := service.ConfigFlag(fs, os.Getenv)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, log, err := service.Load(*configPath, service.Single, os.Environ())
	if err != nil {
		return err
	}
	service.LogStartup(log, service.Single, cfg, *configPath)
	return service.Run(service.Single, cfg, log, os.Getenv)
}

func dbsync(sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ferric dbsync "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := service.ConfigFlag(fs, os.Getenv)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, _, err := service.Load(*configPath, service.Single, os.Environ())
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch sub {
	case "upgrade":
		store, err := service.OpenStore(ctx, cfg, true)
		if err != nil {
			return err
		}
		defer store.Close()
		v, err := store.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "database %s upgraded to schema version %d\n", service.RedactURL(cfg.Database.Connection), v)
		return nil
	case "version":
		store, err := db.Open(ctx, cfg.Database.Connection, service.DBPool(cfg.Database))
		if err != nil {
			return fmt.Errorf("open database %s: %w", service.RedactURL(cfg.Database.Connection), err)
		}
		defer store.Close()
		v, err := store.SchemaVersion(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%d\n", v)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown dbsync command %q", sub)
}
