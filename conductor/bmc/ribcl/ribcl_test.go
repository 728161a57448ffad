package ribcl_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc/ribcl"
	"github.com/ferricbm/ferric/conductor/bmc/ribcl/ribcltest"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
)

const password = "s3cr&t<pw>"

func startILO(opts ribcltest.Options) *ribcltest.Server {
	opts.Username = "admin"
	opts.Password = password
	srv, err := ribcltest.Start("127.0.0.1:0", opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Close)
	return srv
}

func clientFor(srv *ribcltest.Server, mutate ...func(*ribcl.Config)) *ribcl.Client {
	ca, err := srv.WriteCAFile(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	cfg := ribcl.Config{Address: srv.Host, Port: srv.Port, Username: "admin", Password: password,
		TLS: transport.TLS{CAFile: ca}, Timeout: 5 * time.Second}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := ribcl.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return c
}

// imageServer answers HEAD and GET for /image.iso and 404 for anything else.
func imageServer() *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/image.iso" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", "4")
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte("iso!"))
		}
	}))
	DeferCleanup(s.Close)
	return s
}

var _ = Describe("RIBCL client against a fake iLO 4 over HTTPS", func() {
	var (
		ctx context.Context
		srv *ribcltest.Server
		c   *ribcl.Client
	)

	BeforeEach(func() {
		ctx = context.Background()
		srv = startILO(ribcltest.Options{ProductName: "ProLiant DL380 Gen9", PowerDelay: 50 * time.Millisecond})
		c = clientFor(srv)
	})

	It("answers a hand-written RIBCL script the way an iLO does: one document per element, hex status", func() {
		script := `<RIBCL VERSION="2.0"><LOGIN USER_LOGIN="admin" PASSWORD="s3cr&amp;t&lt;pw&gt;">` +
			`<SERVER_INFO MODE="read"><GET_HOST_POWER_STATUS/></SERVER_INFO></LOGIN></RIBCL>`
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := hc.Post(srv.URL+"/ribcl", "text/xml", strings.NewReader(script))
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.Count(string(body), "<?xml")).To(Equal(2))
		Expect(strings.Count(string(body), `STATUS="0x0000"`)).To(Equal(2))
		Expect(string(body)).To(ContainSubstring(`<GET_HOST_POWER HOST_POWER="OFF"/>`))
	})

	It("reads the product name, trusting the iLO's certificate through the CA file", func() {
		Expect(c.ProductName(ctx)).To(Equal("ProLiant DL380 Gen9"))
	})

	Describe("TLS", func() {
		It("refuses the self-signed certificate when no CA file trusts it", func() {
			c := clientFor(srv, func(cfg *ribcl.Config) { cfg.TLS = transport.TLS{} })
			_, err := c.ProductName(ctx)
			Expect(err).To(MatchError(ContainSubstring("certificate")))
			Expect(srv.Requests()).To(BeZero())
		})

		It("talks to it when verification is explicitly off", func() {
			c := clientFor(srv, func(cfg *ribcl.Config) { cfg.TLS = transport.TLS{Insecure: true} })
			Expect(c.ProductName(ctx)).To(Equal("ProLiant DL380 Gen9"))
		})

		It("fails to build with a CA file that holds no certificate", func() {
			_, err := ribcl.New(ribcl.Config{Address: "127.0.0.1", Username: "admin", TLS: transport.TLS{CAFile: "/nonexistent/ca.pem"}})
			Expect(err).To(MatchError(ContainSubstring("CA file")))
		})
	})

	It("reports a refused login as ErrLogin with the iLO's status, and never shows the password", func() {
		srv.SetPassword("another")
		_, err := c.PowerStatus(ctx)
		Expect(errors.Is(err, ribcl.ErrLogin)).To(BeTrue())
		var se *ribcl.StatusError
		Expect(errors.As(err, &se)).To(BeTrue())
		Expect(se.Code).To(Equal(0x005F))
		Expect(err.Error()).NotTo(ContainSubstring("s3cr"))
	})

	Describe("power", func() {
		It("turns the server on and off, the state following after the server's delay", func() {
			Expect(c.PowerStatus(ctx)).To(Equal("OFF"))
			Expect(c.SetHostPower(ctx, true)).To(Succeed())
			Expect(c.PowerStatus(ctx)).To(Equal("OFF"))
			Eventually(func() (string, error) { return c.PowerStatus(ctx) }).Should(Equal("ON"))
			Expect(c.HoldPowerButton(ctx)).To(Succeed())
			Eventually(func() (string, error) { return c.PowerStatus(ctx) }).Should(Equal("OFF"))
		})

		It("leaves an off server off when holding the power button", func() {
			Expect(c.HoldPowerButton(ctx)).To(Succeed())
			Consistently(srv.Power, 150*time.Millisecond).Should(Equal("OFF"))
		})

		It("shuts down through the power button and resets a running server", func() {
			srv.SetPower(true)
			Expect(c.ResetServer(ctx)).To(Succeed())
			Expect(srv.Boots()).To(Equal(1))
			Expect(c.PressPowerButton(ctx)).To(Succeed())
			Eventually(srv.Power).Should(Equal("OFF"))
		})
	})

	Describe("boot devices", func() {
		It("sets a one-time boot device that the next boot uses up", func() {
			Expect(c.OneTimeBoot(ctx)).To(Equal(ribcl.BootNormal))
			Expect(c.SetOneTimeBoot(ctx, ribcl.BootCDROM)).To(Succeed())
			Expect(c.OneTimeBoot(ctx)).To(Equal("CDROM"))
			Expect(c.SetHostPower(ctx, true)).To(Succeed())
			Eventually(srv.Power).Should(Equal("ON"))
			Expect(c.OneTimeBoot(ctx)).To(Equal(ribcl.BootNormal))
		})

		It("puts persistent boot devices first, in the order given", func() {
			Expect(c.UpdatePersistentBoot(ctx, []string{ribcl.BootNetwork, ribcl.BootHDD})).To(Succeed())
			order, err := c.PersistentBoot(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(order).To(HaveLen(5))
			Expect(order[0].Value).To(Equal("NETWORK"))
			Expect(order[1].Value).To(Equal("HDD"))
		})

		It("reports an unknown device with the iLO's status and message", func() {
			err := c.SetOneTimeBoot(ctx, "TAPE")
			var se *ribcl.StatusError
			Expect(errors.As(err, &se)).To(BeTrue())
			Expect(se.Code).To(Equal(0x0001))
			Expect(se.Message).To(ContainSubstring("TAPE"))
		})

		It("reads and sets the pending boot mode", func() {
			Expect(c.PendingBootMode(ctx)).To(Equal("LEGACY"))
			Expect(c.SetPendingBootMode(ctx, "UEFI")).To(Succeed())
			Expect(c.PendingBootMode(ctx)).To(Equal("UEFI"))
		})

		It("enters the pending boot mode at the next boot, with that mode's boot order", func() {
			Expect(c.SetPendingBootMode(ctx, "UEFI")).To(Succeed())
			Expect(srv.BootMode()).To(Equal("LEGACY"))
			Expect(c.SetHostPower(ctx, true)).To(Succeed())
			Eventually(srv.BootMode).Should(Equal("UEFI"))
			order, err := c.PersistentBoot(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(order[0]).To(Equal(ribcl.BootEntry{Value: "Boot000A", Description: "HP iLO Virtual USB CD"}))
		})

		Context("in UEFI mode", func() {
			BeforeEach(func() {
				srv = startILO(ribcltest.Options{UEFI: true})
				c = clientFor(srv)
			})

			It("names boot entries by what their descriptions say", func() {
				order, err := c.PersistentBoot(ctx)
				Expect(err).NotTo(HaveOccurred())
				var got []string
				for _, e := range order {
					got = append(got, e.Class())
				}
				Expect(got).To(Equal([]string{"CDROM", "HDD", "NETWORK"}))
			})

			It("puts the entries of a device class first", func() {
				Expect(c.UpdatePersistentBoot(ctx, []string{ribcl.BootNetwork, ribcl.BootHDD})).To(Succeed())
				Expect(srv.PersistentBoot()).To(Equal([]string{"Boot000C", "Boot000B", "Boot000A"}))
			})

			It("is refused a device class where the iLO wants boot entries", func() {
				Expect(c.SetPersistentBoot(ctx, []string{ribcl.BootNetwork})).To(MatchError(ContainSubstring("0x0001")))
				Expect(c.UpdatePersistentBoot(ctx, []string{"FLOPPY"})).To(MatchError(ContainSubstring("no UEFI boot entry is a FLOPPY device")))
			})
		})

		It("says boot mode is not supported on a server without UEFI", func() {
			old := startILO(ribcltest.Options{NoUEFI: true})
			_, err := clientFor(old).PendingBootMode(ctx)
			Expect(errors.Is(err, ribcl.ErrNotSupported)).To(BeTrue())
			Expect(errors.Is(err, ribcl.ErrLogin)).To(BeFalse())
		})
	})

	Describe("virtual media", func() {
		var images *httptest.Server
		BeforeEach(func() { images = imageServer() })

		It("inserts an image whose URL carries '&', connects it, reads it back and ejects it", func() {
			url := images.URL + "/image.iso?temp_url_sig=ab12&temp_url_expires=1700000900"
			Expect(c.InsertVirtualMedia(ctx, url, ribcl.DeviceCDROM)).To(Succeed())
			Expect(c.SetVMStatus(ctx, ribcl.DeviceCDROM, ribcl.VMConnect, true)).To(Succeed())
			st, err := c.VMStatus(ctx, ribcl.DeviceCDROM)
			Expect(err).NotTo(HaveOccurred())
			Expect(st).To(Equal(ribcl.VMStatus{Device: "CDROM", BootOption: "CONNECT", WriteProtect: true, ImageInserted: true, ImageURL: url}))
			Expect(srv.VirtualMedia(ribcl.DeviceFloppy).Inserted).To(BeFalse())

			Expect(c.EjectVirtualMedia(ctx, ribcl.DeviceCDROM)).To(Succeed())
			Expect(srv.VirtualMedia(ribcl.DeviceCDROM).Inserted).To(BeFalse())
		})

		It("ejects an empty device without an error and without asking the iLO to eject", func() {
			before := srv.Requests()
			Expect(c.EjectVirtualMedia(ctx, ribcl.DeviceFloppy)).To(Succeed())
			Expect(srv.Requests() - before).To(Equal(1))
		})

		It("gets the iLO's refusal when the image URL does not answer HEAD", func() {
			err := c.InsertVirtualMedia(ctx, images.URL+"/missing.img", ribcl.DeviceFloppy)
			var se *ribcl.StatusError
			Expect(errors.As(err, &se)).To(BeTrue())
			Expect(se.Code).To(Equal(0x0035))
			Expect(srv.VirtualMedia(ribcl.DeviceFloppy).Inserted).To(BeFalse())
		})

		It("gets the refusal of an iLO that refuses virtual media", func() {
			srv.RefuseVirtualMedia(true)
			err := c.InsertVirtualMedia(ctx, images.URL+"/image.iso", ribcl.DeviceCDROM)
			Expect(err).To(MatchError(ContainSubstring("0x0035")))
		})
	})

	Describe("timeouts", func() {
		It("gives up on a request after the per-request timeout", func() {
			srv.SetResponseDelay(2 * time.Second)
			c := clientFor(srv, func(cfg *ribcl.Config) { cfg.Timeout = 100 * time.Millisecond })
			start := time.Now()
			_, err := c.PowerStatus(ctx)
			Expect(errors.Is(err, transport.ErrTimeout)).To(BeTrue())
			Expect(err).To(MatchError(ContainSubstring("within 100ms")))
			Expect(time.Since(start)).To(BeNumerically("<", time.Second))
		})

		It("stops at the caller's deadline even when the per-request timeout is longer", func() {
			srv.SetResponseDelay(2 * time.Second)
			dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			_, err := c.PowerStatus(dctx)
			Expect(errors.Is(err, transport.ErrTimeout)).To(BeTrue())
			Expect(err).To(MatchError(ContainSubstring("deadline")))
		})
	})
})
