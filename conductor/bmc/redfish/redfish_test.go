package redfish_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc/redfish"
	"github.com/ferricbm/ferric/conductor/bmc/redfish/redfishtest"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
)

const password = "s3cr3t-pw"

func startBMC(opts redfishtest.Options) *redfishtest.Server {
	opts.Username = "admin"
	opts.Password = password
	srv, err := redfishtest.Start("127.0.0.1:0", opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Close)
	return srv
}

func clientFor(srv *redfishtest.Server, mutate ...func(*redfish.Config)) *redfish.Client {
	ca, err := srv.WriteCAFile(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	cfg := redfish.Config{Address: srv.Addr, Username: "admin", Password: password,
		TLS: transport.TLS{CAFile: ca}, Timeout: 5 * time.Second, TaskPoll: 20 * time.Millisecond}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := redfish.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	return c
}

func imageServer() *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/image.iso" {
			http.NotFound(w, r)
		}
	}))
	DeferCleanup(s.Close)
	return s
}

func session(cfg *redfish.Config) { cfg.Session = true }

var _ = Describe("Redfish client against a fake BMC over HTTPS", func() {
	var (
		ctx context.Context
		srv *redfishtest.Server
		c   *redfish.Client
	)

	BeforeEach(func() {
		ctx = context.Background()
		srv = startBMC(redfishtest.Options{PowerDelay: 50 * time.Millisecond})
		c = clientFor(srv)
	})

	It("serves the service root openly and refuses resources without credentials, with a Redfish error body", func() {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		resp, err := hc.Get(srv.URL + "/redfish/v1")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))

		resp, err = hc.Get(srv.URL + "/redfish/v1/Systems/1")
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		var body struct {
			Error struct {
				Info []struct{ MessageId string } `json:"@Message.ExtendedInfo"`
			} `json:"error"`
		}
		Expect(json.NewDecoder(resp.Body).Decode(&body)).To(Succeed())
		Expect(body.Error.Info).To(ConsistOf(HaveField("MessageId", "Base.1.8.NoValidSession")))
	})

	It("reads the system's model and power state, trusting the BMC through the CA file", func() {
		s, err := c.System(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(s.Model).To(Equal("ProLiant DL360 Gen10"))
		Expect(s.PowerState).To(Equal(redfish.PowerOff))
	})

	It("refuses the self-signed certificate without a CA file, and takes it when verification is off", func() {
		_, err := clientFor(srv, func(cfg *redfish.Config) { cfg.TLS = transport.TLS{} }).System(ctx)
		Expect(err).To(MatchError(ContainSubstring("certificate")))
		_, err = clientFor(srv, func(cfg *redfish.Config) { cfg.TLS = transport.TLS{Insecure: true} }).System(ctx)
		Expect(err).NotTo(HaveOccurred())
	})

	It("refuses a plain-HTTP address", func() {
		_, err := redfish.New(redfish.Config{Address: "http://127.0.0.1", Username: "admin"})
		Expect(err).To(MatchError(ContainSubstring("https")))
	})

	Describe("authentication", func() {
		It("reports refused Basic credentials as ErrUnauthorized without the password", func() {
			srv.SetPassword("another")
			_, err := c.System(ctx)
			Expect(errors.Is(err, redfish.ErrUnauthorized)).To(BeTrue())
			Expect(err.Error()).NotTo(ContainSubstring(password))
		})

		It("logs in once for a session, logs in again when the session ends, and logs out", func() {
			c := clientFor(srv, session)
			Expect(c.System(ctx)).Error().NotTo(HaveOccurred())
			Expect(c.System(ctx)).Error().NotTo(HaveOccurred())
			Expect(srv.Sessions()).To(Equal(1))

			srv.SetPassword(password)
			Expect(srv.Sessions()).To(BeZero())
			Expect(c.System(ctx)).Error().NotTo(HaveOccurred())
			Expect(srv.Sessions()).To(Equal(1))

			Expect(c.Close(ctx)).To(Succeed())
			Expect(srv.Sessions()).To(BeZero())
		})

		It("reports a refused session login as ErrUnauthorized", func() {
			srv.SetPassword("another")
			_, err := clientFor(srv, session).System(ctx)
			Expect(errors.Is(err, redfish.ErrUnauthorized)).To(BeTrue())
			Expect(err.Error()).NotTo(ContainSubstring(password))
		})
	})

	Describe("power", func() {
		It("powers on and off with reset types, the state following after the delay", func() {
			Expect(c.Reset(ctx, redfish.ResetOn)).To(Succeed())
			Eventually(func() (string, error) { s, err := c.System(ctx); return s.PowerState, err }).Should(Equal(redfish.PowerOn))
			Expect(c.Reset(ctx, redfish.ResetForceRestart)).To(Succeed())
			Expect(srv.Boots()).To(Equal(2))
			Expect(c.Reset(ctx, redfish.ResetForceOff)).To(Succeed())
			Eventually(srv.PowerState).Should(Equal(redfish.PowerOff))
		})

		It("passes on the service's refusal of an unknown reset type", func() {
			err := c.Reset(ctx, "Explode")
			var he *redfish.HTTPError
			Expect(errors.As(err, &he)).To(BeTrue())
			Expect(he.Status).To(Equal(http.StatusBadRequest))
			Expect(he.Message).To(ContainSubstring("ResetType"))
		})
	})

	Describe("boot override", func() {
		It("boots once from the CD and then falls back", func() {
			Expect(c.SetBootOverride(ctx, redfish.BootCd, redfish.BootOnce)).To(Succeed())
			s, err := c.System(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.Boot).To(Equal(redfish.Boot{Target: "Cd", Enabled: "Once"}))
			Expect(c.Reset(ctx, redfish.ResetOn)).To(Succeed())
			Eventually(srv.Boot).Should(Equal(redfish.Boot{Target: "None", Enabled: "Disabled"}))
		})

		It("keeps a continuous override across boots", func() {
			Expect(c.SetBootOverride(ctx, redfish.BootPxe, redfish.BootContinuous)).To(Succeed())
			Expect(c.Reset(ctx, redfish.ResetOn)).To(Succeed())
			Eventually(srv.Boots).Should(Equal(1))
			Expect(srv.Boot()).To(Equal(redfish.Boot{Target: "Pxe", Enabled: "Continuous"}))
		})
	})

	Describe("virtual media", func() {
		var images *httptest.Server
		BeforeEach(func() { images = imageServer() })

		It("finds the CD device by media type, inserts write-protected, replaces and ejects", func() {
			m, err := c.VirtualMedia(ctx, redfish.MediaCD, redfish.MediaDVD)
			Expect(err).NotTo(HaveOccurred())
			Expect(m.MediaTypes).To(ContainElement("DVD"))
			Expect(m.Inserted).To(BeFalse())

			url := images.URL + "/image.iso?temp_url_sig=ab&temp_url_expires=1"
			Expect(c.InsertMedia(ctx, url, redfish.MediaCD)).To(Succeed())
			Expect(srv.Media(redfish.MediaCD)).To(Equal(redfishtest.Media{Types: []string{"CD", "DVD"}, Inserted: true, Image: url, WriteProtected: true}))
			Expect(srv.Media(redfish.MediaFloppy).Inserted).To(BeFalse())

			other := images.URL + "/image.iso?v=2"
			Expect(c.InsertMedia(ctx, other, redfish.MediaCD)).To(Succeed())
			Expect(srv.Media(redfish.MediaCD).Image).To(Equal(other))

			Expect(c.EjectMedia(ctx, redfish.MediaCD)).To(Succeed())
			Expect(srv.Media(redfish.MediaCD).Inserted).To(BeFalse())
			Expect(c.EjectMedia(ctx, redfish.MediaCD)).To(Succeed())
		})

		It("says when no device takes the media type", func() {
			err := c.InsertMedia(ctx, images.URL+"/image.iso", "Tape")
			Expect(errors.Is(err, redfish.ErrNoMedia)).To(BeTrue())
		})

		It("passes on the refusal of an image the BMC cannot reach", func() {
			err := c.InsertMedia(ctx, images.URL+"/missing.img", redfish.MediaFloppy)
			var he *redfish.HTTPError
			Expect(errors.As(err, &he)).To(BeTrue())
			Expect(he.Message).To(ContainSubstring("could not be reached"))
		})

		It("reports a task the BMC started for an insert and then failed, nothing inserted", func() {
			srv.FailMediaTasks("Unable to mount the image.")
			err := c.InsertMedia(ctx, images.URL+"/image.iso", redfish.MediaCD)
			var te *redfish.TaskError
			Expect(errors.As(err, &te)).To(BeTrue())
			Expect(te.State).To(Equal(redfish.TaskException))
			Expect(err).To(MatchError(ContainSubstring("Unable to mount the image.")))
			Expect(srv.Media(redfish.MediaCD).Inserted).To(BeFalse())

			srv.FailMediaTasks("")
			Expect(c.InsertMedia(ctx, images.URL+"/image.iso", redfish.MediaCD)).To(Succeed())
		})

		Context("when the BMC answers inserts with a task", func() {
			BeforeEach(func() {
				srv = startBMC(redfishtest.Options{AsyncMedia: true, TaskDelay: 100 * time.Millisecond})
				c = clientFor(srv)
			})

			It("waits for the task to complete", func() {
				Expect(c.InsertMedia(ctx, images.URL+"/image.iso", redfish.MediaFloppy)).To(Succeed())
				Expect(srv.Media(redfish.MediaFloppy).Inserted).To(BeTrue())
			})

			It("reports a task that ends in Exception with its messages", func() {
				srv.RefuseVirtualMedia(true)
				err := c.InsertMedia(ctx, images.URL+"/image.iso", redfish.MediaFloppy)
				var te *redfish.TaskError
				Expect(errors.As(err, &te)).To(BeTrue())
				Expect(te.State).To(Equal(redfish.TaskException))
				Expect(err).To(MatchError(ContainSubstring("not available")))
			})

			It("stops waiting at the caller's deadline", func() {
				dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				defer cancel()
				err := c.InsertMedia(dctx, images.URL+"/image.iso", redfish.MediaFloppy)
				Expect(errors.Is(err, transport.ErrTimeout)).To(BeTrue())
			})
		})
	})

	It("gives up on a request after the per-request timeout", func() {
		srv.SetResponseDelay(2 * time.Second)
		c := clientFor(srv, func(cfg *redfish.Config) { cfg.Timeout = 100 * time.Millisecond })
		_, err := c.System(ctx)
		Expect(errors.Is(err, transport.ErrTimeout)).To(BeTrue())
		Expect(err).To(MatchError(ContainSubstring("within 100ms")))
	})
})

var _ = Describe("Redfish client against a misbehaving service", func() {
	It("does not follow a task monitor off the BMC, where the credentials would go", func() {
		var elsewhere atomic.Int32
		other := httptest.NewTLSServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { elsewhere.Add(1) }))
		DeferCleanup(other.Close)
		bmc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/redfish/v1/Systems":
				_, _ = w.Write([]byte(`{"Members": [{"@odata.id": "/redfish/v1/Systems/1"}]}`))
			default:
				w.Header().Set("Location", other.URL+"/redfish/v1/TaskService/TaskMonitors/1")
				w.WriteHeader(http.StatusAccepted)
			}
		}))
		DeferCleanup(bmc.Close)
		c, err := redfish.New(redfish.Config{Address: bmc.URL, Username: "admin", Password: password,
			TLS: transport.TLS{Insecure: true}, TaskPoll: 10 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred())
		err = c.Reset(context.Background(), redfish.ResetOn)
		Expect(err).To(MatchError(ContainSubstring("is not on the BMC")))
		Expect(elsewhere.Load()).To(BeZero())
	})
})
