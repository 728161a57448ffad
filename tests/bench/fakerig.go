package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/tests/harness"
)

// fakeRig is what the sections driving fake-hardware nodes need:
// ferric-api and one ferric-conductor over RabbitMQ and a MySQL database
// of their own, and a store on that database for seeding nodes.
type fakeRig struct {
	api       *apiClient
	apiSvc    *harness.Service
	conductor *harness.Service
	store     *db.Store
	database  *harness.Database

	closers closers
}

// startFakeRig builds the binaries into work and starts a rig whose
// configuration is the harness's base (no debug log, callbacks waited for
// 10 minutes) adjusted by configure. The conductor counts as ready once it
// is in the conductor registry, which does not depend on the API's
// microversion range.
func startFakeRig(ctx context.Context, work, dbPrefix string, configure func(harness.Config) harness.Config) (r *fakeRig, err error) {
	rig := &fakeRig{}
	defer func() {
		if err != nil {
			rig.Close()
		}
	}()
	fmt.Println("building binaries ...")
	bin, err := harness.Build(filepath.Join(work, "bin"))
	if err != nil {
		return nil, err
	}
	if rig.database, err = harness.CreateDatabase(ctx, dbPrefix); err != nil {
		return nil, err
	}
	rig.closers = append(rig.closers, func() error { return rig.database.Drop(context.Background()) })
	timings := harness.FastTimings
	timings.CallbackTimeout = 10 * time.Minute
	base := configure(harness.BaseConfig(rig.database.Connection(), "amqp", timings).Set("DEFAULT", "debug", false))
	d := harness.NewDeployment(bin, work, base)
	rig.closers = append(rig.closers, func() error { return d.StopAll(30 * time.Second) })
	if err := d.DBSync(ctx); err != nil {
		return nil, err
	}
	if rig.store, err = db.Open(ctx, rig.database.Connection()); err != nil {
		return nil, err
	}
	rig.closers = append(rig.closers, rig.store.Close)
	d.ConductorReady = func(ctx context.Context, host string) error {
		members, err := rig.store.ActiveMembers(ctx, timings.HeartbeatTimeout)
		if err != nil {
			return err
		}
		for _, m := range members {
			if m.Hostname == host {
				return nil
			}
		}
		return fmt.Errorf("conductor %s not registered yet", host)
	}
	if rig.apiSvc, err = d.StartAPI(ctx, "api"); err != nil {
		return nil, err
	}
	if rig.conductor, err = d.StartConductor(ctx, "conductor"); err != nil {
		return nil, err
	}
	rig.api = newAPI(d.APIURL)
	if rig.api.version, err = harness.MaxVersion(ctx, d.APIURL); err != nil {
		return nil, err
	}
	return rig, nil
}

// Close stops what the rig started, last first.
func (r *fakeRig) Close() error { return r.closers.run() }
