package bmc_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/bmc"
	"github.com/ferricbm/ferric/conductor/bmc/ilotest"
	"github.com/ferricbm/ferric/conductor/bmc/redfish"
	"github.com/ferricbm/ferric/conductor/bmc/ribcl"
	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/states"
)

const password = "pa55-w0rd"

var fastPoll = bmc.Poll{Interval: 20 * time.Millisecond, Retries: 10}

func startILO(opts ilotest.Options) *ilotest.Server {
	opts.Username, opts.Password = "admin", password
	srv, err := ilotest.Start("127.0.0.1:0", opts)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(srv.Close)
	return srv
}

func configFor(srv *ilotest.Server) bmc.Config {
	ca, err := srv.WriteCAFile(GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	return bmc.Config{Address: srv.Host, Port: srv.Port, Username: "admin", Password: password,
		TLS: transport.TLS{CAFile: ca}, Timeout: 5 * time.Second, Poll: fastPoll}
}

func connect(srv *ilotest.Server) *bmc.Controller {
	c, err := bmc.Connect(context.Background(), configFor(srv))
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("choosing the protocol from the product name", func() {
	ctx := context.Background()

	It("speaks RIBCL to a Gen9 iLO 4", func() {
		c := connect(startILO(ilotest.Options{Model: "ProLiant DL380 Gen9"}))
		Expect(c.Protocol()).To(Equal("ribcl"))
		Expect(c.Product).To(Equal("ProLiant DL380 Gen9"))
	})

	It("speaks Redfish to a Gen10 iLO 5", func() {
		c := connect(startILO(ilotest.Options{Model: "ProLiant DL360 Gen10 Plus"}))
		Expect(c.Protocol()).To(Equal("redfish"))
		Expect(c.Product).To(Equal("ProLiant DL360 Gen10 Plus"))
	})

	It("speaks Redfish when the iLO refuses RIBCL", func() {
		c := connect(startILO(ilotest.Options{Model: "ProLiant DL325 Gen11", RIBCLDisabled: true}))
		Expect(c.Protocol()).To(Equal("redfish"))
		Expect(c.Product).To(Equal("ProLiant DL325 Gen11"))
	})

	It("fails on refused credentials without trying Redfish", func() {
		srv := startILO(ilotest.Options{Model: "ProLiant DL360 Gen10"})
		cfg := configFor(srv)
		cfg.Password = "wrong"
		_, err := bmc.Connect(ctx, cfg)
		Expect(errors.Is(err, ribcl.ErrLogin)).To(BeTrue())
		Expect(err.Error()).NotTo(ContainSubstring("wrong"))
		Expect(srv.Redfish.Requests()).To(BeZero())
	})

	It("fails on an untrusted certificate", func() {
		srv := startILO(ilotest.Options{})
		cfg := configFor(srv)
		cfg.TLS = transport.TLS{}
		_, err := bmc.Connect(ctx, cfg)
		Expect(err).To(MatchError(ContainSubstring("certificate")))
	})

	It("uses the protocol it is told to", func() {
		srv := startILO(ilotest.Options{Model: "ProLiant DL360 Gen10"})
		cfg := configFor(srv)
		cfg.Protocol = bmc.ProtocolRIBCL
		c, err := bmc.Connect(ctx, cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Protocol()).To(Equal("ribcl"))
	})
})

// node is what a spec needs of a fake iLO whatever protocol it speaks.
type node struct {
	power    func() string
	boots    func() int
	inserted func(bmc.Media) string
}

func ribclNode(srv *ilotest.Server) node {
	dev := map[bmc.Media]string{bmc.Floppy: ribcl.DeviceFloppy, bmc.CDROM: ribcl.DeviceCDROM}
	return node{
		power: func() string {
			return map[string]string{"ON": states.PowerOn, "OFF": states.PowerOff}[srv.RIBCL.Power()]
		},
		boots: srv.RIBCL.Boots,
		inserted: func(m bmc.Media) string {
			v := srv.RIBCL.VirtualMedia(dev[m])
			if v.Inserted {
				Expect(v.BootOption).To(Equal(ribcl.VMConnect), "an inserted image is connected")
			}
			return v.URL
		},
	}
}

func redfishNode(srv *ilotest.Server) node {
	typ := map[bmc.Media]string{bmc.Floppy: redfish.MediaFloppy, bmc.CDROM: redfish.MediaCD}
	return node{
		power: func() string {
			return map[string]string{redfish.PowerOn: states.PowerOn, redfish.PowerOff: states.PowerOff}[srv.Redfish.PowerState()]
		},
		boots:    srv.Redfish.Boots,
		inserted: func(m bmc.Media) string { return srv.Redfish.Media(typ[m]).Image },
	}
}

func images() *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/deploy.iso" && r.URL.Path != "/params.img" {
			http.NotFound(w, r)
		}
	}))
	DeferCleanup(s.Close)
	return s
}

var _ = Describe("driving a server's BMC", func() {
	for _, proto := range []struct {
		name  string
		model string
		node  func(*ilotest.Server) node
	}{
		{"ribcl", "ProLiant DL380 Gen9", ribclNode},
		{"redfish", "ProLiant DL380 Gen10", redfishNode},
	} {
		Context("over "+proto.name, func() {
			var (
				ctx context.Context
				srv *ilotest.Server
				c   *bmc.Controller
				n   node
			)
			BeforeEach(func() {
				ctx = context.Background()
				srv = startILO(ilotest.Options{Model: proto.model, PowerDelay: 60 * time.Millisecond})
				c = connect(srv)
				Expect(c.Protocol()).To(Equal(proto.name))
				n = proto.node(srv)
			})

			It("powers on and off, returning once the server is in the state", func() {
				Expect(c.PowerState(ctx)).To(Equal(states.PowerOff))
				Expect(c.SetPowerState(ctx, states.PowerOn)).To(Succeed())
				Expect(n.power()).To(Equal(states.PowerOn))
				Expect(c.SetPowerState(ctx, states.PowerOff)).To(Succeed())
				Expect(n.power()).To(Equal(states.PowerOff))
			})

			It("shuts down softly", func() {
				Expect(c.SetPowerState(ctx, states.PowerOn)).To(Succeed())
				Expect(c.SetPowerState(ctx, states.SoftPowerOff)).To(Succeed())
				Expect(n.power()).To(Equal(states.PowerOff))
			})

			It("reboots a running server with a reset and powers on one that is off", func() {
				Expect(c.Reboot(ctx)).To(Succeed())
				Expect(n.power()).To(Equal(states.PowerOn))
				Expect(n.boots()).To(Equal(1))
				Expect(c.SetPowerState(ctx, states.Rebooting)).To(Succeed())
				Expect(n.boots()).To(Equal(2))
				Expect(n.power()).To(Equal(states.PowerOn))
			})

			It("fails with PowerStateFailure when the server does not get there in time", func() {
				srv = startILO(ilotest.Options{Model: proto.model, PowerDelay: time.Hour})
				slow := connect(srv)
				slow.Poll = bmc.Poll{Interval: 10 * time.Millisecond, Retries: 3}
				err := slow.SetPowerState(ctx, states.PowerOn)
				Expect(errs.Is(err, errs.KindPowerStateFailure)).To(BeTrue())
				Expect(err).To(MatchError(ContainSubstring("power on within 30ms")))
			})

			It("refuses a power state it cannot set", func() {
				Expect(errs.Is(c.SetPowerState(ctx, "sideways"), errs.KindInvalidParameterValue)).To(BeTrue())
			})

			It("sets a one-time boot device, which the next boot uses up", func() {
				Expect(c.SetBootDevice(ctx, bmc.BootCDROM, false)).To(Succeed())
				d, err := c.BootDevice(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Device).To(Equal(bmc.BootCDROM))
				Expect(*d.Persistent).To(BeFalse())
				Expect(c.SetPowerState(ctx, states.PowerOn)).To(Succeed())
				d, err = c.BootDevice(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Persistent == nil || *d.Persistent).To(BeTrue(), "no one-time device is left: %+v", d)
			})

			It("sets a persistent boot device that survives a boot", func() {
				Expect(c.SetBootDevice(ctx, bmc.BootPXE, true)).To(Succeed())
				Expect(c.SetPowerState(ctx, states.PowerOn)).To(Succeed())
				d, err := c.BootDevice(ctx)
				Expect(err).NotTo(HaveOccurred())
				Expect(d.Device).To(Equal(bmc.BootPXE))
				Expect(*d.Persistent).To(BeTrue())
			})

			if proto.name == "ribcl" {
				It("sets a persistent boot device by its UEFI boot entry on a server in UEFI mode", func() {
					srv = startILO(ilotest.Options{Model: proto.model, UEFI: true})
					c = connect(srv)
					Expect(c.SetBootDevice(ctx, bmc.BootPXE, true)).To(Succeed())
					Expect(srv.RIBCL.PersistentBoot()[0]).To(Equal("Boot000C"))
					d, err := c.BootDevice(ctx)
					Expect(err).NotTo(HaveOccurred())
					Expect(d.Device).To(Equal(bmc.BootPXE))
					Expect(*d.Persistent).To(BeTrue())
				})
			}

			It("refuses an unknown boot device", func() {
				Expect(errs.Is(c.SetBootDevice(ctx, "tape", false), errs.KindInvalidParameterValue)).To(BeTrue())
			})

			It("inserts floppy and CD images, replaces one, and ejects both", func() {
				img := images()
				Expect(c.InsertMedia(ctx, bmc.Floppy, img.URL+"/params.img")).To(Succeed())
				Expect(c.InsertMedia(ctx, bmc.CDROM, img.URL+"/deploy.iso?a=1&b=2")).To(Succeed())
				Expect(n.inserted(bmc.Floppy)).To(Equal(img.URL + "/params.img"))
				Expect(n.inserted(bmc.CDROM)).To(Equal(img.URL + "/deploy.iso?a=1&b=2"))

				Expect(c.InsertMedia(ctx, bmc.CDROM, img.URL+"/deploy.iso?v=2")).To(Succeed())
				Expect(n.inserted(bmc.CDROM)).To(Equal(img.URL + "/deploy.iso?v=2"))

				Expect(c.EjectMedia(ctx, bmc.Floppy)).To(Succeed())
				Expect(c.EjectMedia(ctx, bmc.CDROM)).To(Succeed())
				Expect(n.inserted(bmc.Floppy)).To(BeEmpty())
				Expect(n.inserted(bmc.CDROM)).To(BeEmpty())
				Expect(c.EjectMedia(ctx, bmc.CDROM)).To(Succeed())
			})

			It("passes on the BMC's refusal of an image it cannot fetch", func() {
				img := images()
				Expect(c.InsertMedia(ctx, bmc.CDROM, img.URL+"/gone.iso")).NotTo(Succeed())
				Expect(n.inserted(bmc.CDROM)).To(BeEmpty())
			})
		})
	}
})
