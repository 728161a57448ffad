package db

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hashring"
	"github.com/ferricbm/ferric/pkg/model"
)

func ifaces(hwTypes ...string) []model.ConductorHardwareInterface {
	var out []model.ConductorHardwareInterface
	for _, hw := range hwTypes {
		out = append(out,
			model.ConductorHardwareInterface{HardwareType: hw, InterfaceType: "power", InterfaceName: hw, Default: true},
			model.ConductorHardwareInterface{HardwareType: hw, InterfaceType: "deploy", InterfaceName: "direct", Default: true},
			model.ConductorHardwareInterface{HardwareType: hw, InterfaceType: "deploy", InterfaceName: "iscsi"},
		)
	}
	return out
}

// age pretends a conductor last heartbeated d ago.
func age(ctx context.Context, s *Store, hostname string, d time.Duration) {
	GinkgoHelper()
	Expect(s.db.WithContext(ctx).Exec("UPDATE conductors SET updated_at = ? WHERE hostname = ?", now().Add(-d), hostname).Error).To(Succeed())
}

func conductorSpecs(store func() *Store) {
	Describe("conductors", func() {
		const timeout = time.Minute

		It("registers a conductor and its hardware interfaces", func(ctx SpecContext) {
			s := store()
			c := &model.Conductor{Hostname: "c1", ConductorGroup: "rack1"}
			Expect(s.RegisterConductor(ctx, c, ifaces("ipmi", "redfish"))).To(Succeed())
			Expect(c.ID).NotTo(BeZero())
			Expect(c.Online).To(BeTrue())
			Expect(c.UpdatedAt).NotTo(BeNil())

			got, err := s.GetConductor(ctx, "c1")
			Expect(err).NotTo(HaveOccurred())
			Expect(got.ConductorGroup).To(Equal("rack1"))
			Expect(got.Online).To(BeTrue())
			Expect(countRows(ctx, s, "conductor_hardware_interfaces")).To(Equal(int64(6)))

			types, err := s.ConductorHardwareTypes(ctx, "c1")
			Expect(err).NotTo(HaveOccurred())
			Expect(types).To(Equal([]string{"ipmi", "redfish"}))

			members, err := s.ActiveMembers(ctx, timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(members).To(HaveLen(2))
			// A member expires a heartbeat timeout after its last heartbeat.
			Expect(members[0].Expires).To(BeTemporally("~", got.UpdatedAt.Add(timeout), time.Millisecond))
			Expect(members[1].Expires).To(Equal(members[0].Expires))
			for i := range members {
				members[i].Expires = time.Time{}
			}
			Expect(members).To(Equal([]hashring.Member{
				{Hostname: "c1", ConductorGroup: "rack1", HardwareType: "ipmi"},
				{Hostname: "c1", ConductorGroup: "rack1", HardwareType: "redfish"},
			}))
		})

		It("re-registration takes over the row and replaces the interfaces", func(ctx SpecContext) {
			s := store()
			first := &model.Conductor{Hostname: "c1"}
			Expect(s.RegisterConductor(ctx, first, ifaces("ipmi", "redfish"))).To(Succeed())
			Expect(s.UnregisterConductor(ctx, "c1")).To(Succeed())

			again := &model.Conductor{Hostname: "c1", ConductorGroup: "g2"}
			dup := append(ifaces("ilo"), ifaces("ilo")...)
			Expect(s.RegisterConductor(ctx, again, dup)).To(Succeed())
			Expect(again.ID).To(Equal(first.ID))
			Expect(again.CreatedAt).To(Equal(first.CreatedAt))
			Expect(again.Online).To(BeTrue())
			Expect(again.ConductorGroup).To(Equal("g2"))
			Expect(countRows(ctx, s, "conductors")).To(Equal(int64(1)))
			types, err := s.ConductorHardwareTypes(ctx, "c1")
			Expect(err).NotTo(HaveOccurred())
			Expect(types).To(Equal([]string{"ilo"}))
		})

		It("gives each registration of a hostname the next epoch", func(ctx SpecContext) {
			s := store()
			first := &model.Conductor{Hostname: "c1"}
			Expect(s.RegisterConductor(ctx, first, ifaces("ipmi"))).To(Succeed())
			Expect(first.Epoch).To(Equal(int64(1)))
			again := &model.Conductor{Hostname: "c1"}
			Expect(s.RegisterConductor(ctx, again, ifaces("ipmi"))).To(Succeed())
			Expect(again.Epoch).To(Equal(int64(2)))
			other := &model.Conductor{Hostname: "c2"}
			Expect(s.RegisterConductor(ctx, other, ifaces("ipmi"))).To(Succeed())
			Expect(other.Epoch).To(Equal(int64(1)))
			stored, err := s.GetConductor(ctx, "c1")
			Expect(err).NotTo(HaveOccurred())
			Expect(stored.Epoch).To(Equal(int64(2)))
		})

		It("lists the hardware interfaces of live conductors, each in its registration order", func(ctx SpecContext) {
			s := store()
			Expect(s.RegisterConductor(ctx, &model.Conductor{Hostname: "b"}, ifaces("redfish", "ipmi"))).To(Succeed())
			Expect(s.RegisterConductor(ctx, &model.Conductor{Hostname: "a"}, ifaces("ipmi"))).To(Succeed())
			Expect(s.RegisterConductor(ctx, &model.Conductor{Hostname: "stale"}, ifaces("ilo"))).To(Succeed())
			age(ctx, s, "stale", 2*timeout)

			rows, err := s.ActiveHardwareInterfaces(ctx, timeout)
			Expect(err).NotTo(HaveOccurred())
			var got []model.ConductorHardwareInterface
			for _, r := range rows {
				Expect(r.ConductorID).NotTo(BeZero())
				got = append(got, model.ConductorHardwareInterface{HardwareType: r.HardwareType,
					InterfaceType: r.InterfaceType, InterfaceName: r.InterfaceName, Default: r.Default})
			}
			Expect(got).To(Equal(append(ifaces("ipmi"), ifaces("redfish", "ipmi")...)), "a's rows, then b's")
		})

		It("tracks liveness from heartbeats and the online flag", func(ctx SpecContext) {
			s := store()
			for _, h := range []string{"alive", "stale", "gone"} {
				Expect(s.RegisterConductor(ctx, &model.Conductor{Hostname: h}, ifaces("ipmi"))).To(Succeed())
			}
			Expect(s.RegisterConductor(ctx, &model.Conductor{Hostname: "redfish-only"}, ifaces("redfish"))).To(Succeed())
			age(ctx, s, "stale", 2*timeout)
			Expect(s.UnregisterConductor(ctx, "gone")).To(Succeed())

			members, err := s.ActiveMembers(ctx, timeout)
			Expect(err).NotTo(HaveOccurred())
			for i := range members {
				Expect(members[i].Expires).To(BeTemporally(">", time.Now()))
				members[i].Expires = time.Time{}
			}
			Expect(members).To(ConsistOf(
				hashring.Member{Hostname: "alive", HardwareType: "ipmi"},
				hashring.Member{Hostname: "redfish-only", HardwareType: "redfish"},
			))
			offline, err := s.OfflineConductors(ctx, timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(offline).To(Equal([]string{"stale"}))
			hosts, err := s.HardwareTypeHosts(ctx, timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(hosts).To(Equal(map[string][]string{"ipmi": {"alive"}, "redfish": {"redfish-only"}}))

			Expect(s.TouchConductor(ctx, "stale")).To(Succeed())
			offline, err = s.OfflineConductors(ctx, timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(offline).To(BeEmpty())
			hosts, err = s.HardwareTypeHosts(ctx, timeout)
			Expect(err).NotTo(HaveOccurred())
			Expect(hosts["ipmi"]).To(Equal([]string{"alive", "stale"}))

			gone, err := s.GetConductor(ctx, "gone")
			Expect(err).NotTo(HaveOccurred())
			Expect(gone.Online).To(BeFalse())
			types, err := s.ConductorHardwareTypes(ctx, "gone")
			Expect(err).NotTo(HaveOccurred())
			Expect(types).To(BeEmpty())
		})

		It("reports unknown conductors as ConductorNotFound", func(ctx SpecContext) {
			s := store()
			msg := "Conductor ghost could not be found."
			_, err := s.GetConductor(ctx, "ghost")
			expectErr(err, errs.KindConductorNotFound, msg, http.StatusNotFound)
			expectErr(s.TouchConductor(ctx, "ghost"), errs.KindConductorNotFound, msg, http.StatusNotFound)
			expectErr(s.UnregisterConductor(ctx, "ghost"), errs.KindConductorNotFound, msg, http.StatusNotFound)
			_, err = s.ConductorHardwareTypes(ctx, "ghost")
			expectErr(err, errs.KindConductorNotFound, msg, http.StatusNotFound)
			_, err = s.ListConductors(ctx, Page{Marker: "ghost"})
			expectErr(err, errs.KindConductorNotFound, msg, http.StatusNotFound)
		})

		It("lists conductors a page at a time, by hostname marker", func(ctx SpecContext) {
			s := store()
			for _, h := range []string{"c3", "c1", "c4", "c2"} {
				Expect(s.RegisterConductor(ctx, &model.Conductor{Hostname: h}, nil)).To(Succeed())
			}
			page, err := s.ListConductors(ctx, Page{Limit: 3, SortKey: "hostname", SortDir: "desc"})
			Expect(err).NotTo(HaveOccurred())
			Expect(hostnames(page)).To(Equal([]string{"c4", "c3", "c2"}))
			page, err = s.ListConductors(ctx, Page{Limit: 3, SortKey: "hostname", SortDir: "desc", Marker: "c2"})
			Expect(err).NotTo(HaveOccurred())
			Expect(hostnames(page)).To(Equal([]string{"c1"}))
			// Default order is registration order.
			page, err = s.ListConductors(ctx, Page{Marker: "c1"})
			Expect(err).NotTo(HaveOccurred())
			Expect(hostnames(page)).To(Equal([]string{"c4", "c2"}))
		})
	})
}

func hostnames(cs []model.Conductor) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Hostname
	}
	return out
}
