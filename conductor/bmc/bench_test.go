package bmc_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/pkg/states"
)

// benchController connects to a fake iLO of model over HTTPS with a
// verified certificate, as the driver will.
func benchController(b *testing.B, model string) *bmc.Controller {
	b.Helper()
	srv, err := ilotest.Start("127.0.0.1:0", ilotest.Options{Username: "admin", Password: password, Model: model})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close() })
	ca, err := srv.WriteCAFile(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	c, err := bmc.Connect(context.Background(), bmc.Config{Address: srv.Host, Port: srv.Port, Username: "admin",
		Password: password, TLS: transport.TLS{CAFile: ca}, Timeout: 5 * time.Second,
		Poll: bmc.Poll{Interval: time.Millisecond, Retries: 5}})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var benchModels = []struct{ name, model string }{
	{"ribcl", "ProLiant DL380 Gen9"},
	{"redfish", "ProLiant DL380 Gen10"},
}

// BenchmarkPowerState is one power state read: for RIBCL a login and a
// command in one POST, for Redfish a GET of the system.
func BenchmarkPowerState(b *testing.B) {
	for _, m := range benchModels {
		b.Run(m.name, func(b *testing.B) {
			c := benchController(b, m.model)
			ctx := context.Background()
			for b.Loop() {
				if st, err := c.PowerState(ctx); err != nil || st != states.PowerOff {
					b.Fatal(st, err)
				}
			}
		})
	}
}

// BenchmarkSetBootDevice is a one-time boot device change.
func BenchmarkSetBootDevice(b *testing.B) {
	for _, m := range benchModels {
		b.Run(m.name, func(b *testing.B) {
			c := benchController(b, m.model)
			ctx := context.Background()
			for b.Loop() {
				if err := c.SetBootDevice(ctx, bmc.BootCDROM, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInsertMedia is attaching a CD image the way the driver does
// (eject, insert, connect), the fake checking the image with HEAD.
func BenchmarkInsertMedia(b *testing.B) {
	img := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	b.Cleanup(img.Close)
	for _, m := range benchModels {
		b.Run(m.name, func(b *testing.B) {
			c := benchController(b, m.model)
			ctx := context.Background()
			for b.Loop() {
				if err := c.InsertMedia(ctx, bmc.CDROM, img.URL+"/deploy.iso"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
