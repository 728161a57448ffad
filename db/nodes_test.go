package db

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/model"
)

func newNode(name string) *model.Node {
	n := &model.Node{Driver: "ipmi", ProvisionState: ptr("enroll"), PowerState: ptr("power off")}
	if name != "" {
		n.Name = ptr(name)
	}
	return n
}

func countRows(ctx context.Context, s *Store, table string) int64 {
	var n int64
	Expect(s.db.WithContext(ctx).Raw("SELECT COUNT(*) FROM " + table).Row().Scan(&n)).To(Succeed())
	return n
}

func nodeSpecs(backend string, store func() *Store) {
	Describe("nodes", func() {
		It("creates and reads back every kind of field", func(ctx SpecContext) {
			s := store()
			started := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
			n := &model.Node{
				Name:                ptr("node-1"),
				Driver:              "ipmi",
				DriverInfo:          model.JSONObject{"ipmi_address": "10.0.0.1", "ipmi_password": "secret", "port": float64(623)},
				Properties:          model.JSONObject{"cpus": float64(8), "capabilities": "boot_mode:uefi"},
				InstanceUUID:        ptr("5d8e7d2e-6c2f-4c7c-8fd8-0b8e3b0d4a11"),
				ProvisionState:      ptr("available"),
				Maintenance:         true,
				MaintenanceReason:   ptr("flaky"),
				ConductorGroup:      "rack1",
				Traits:              model.StringList{"CUSTOM_A", "CUSTOM_B"},
				AutomatedClean:      ptr(false),
				Retired:             true,
				InspectionStartedAt: &started,
				Description:         ptr("ünïcode ✓"),
			}
			Expect(s.CreateNode(ctx, n)).To(Succeed())
			Expect(n.ID).NotTo(BeZero())
			Expect(n.UUID).To(MatchRegexp(`^[0-9a-f-]{36}$`))
			Expect(n.CreatedAt).To(BeTemporally("~", time.Now(), 5*time.Second))
			Expect(n.UpdatedAt).To(BeNil())

			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.ID).To(Equal(n.ID))
			Expect(got.Name).To(Equal(ptr("node-1")))
			Expect(got.DriverInfo).To(Equal(n.DriverInfo))
			Expect(got.Properties).To(Equal(n.Properties))
			Expect(got.Traits).To(Equal(n.Traits))
			Expect(got.InstanceUUID).To(Equal(n.InstanceUUID))
			Expect(got.Maintenance).To(BeTrue())
			Expect(got.Retired).To(BeTrue())
			Expect(got.AutomatedClean).To(Equal(ptr(false)))
			Expect(got.ConsoleEnabled).To(BeFalse())
			Expect(got.ConductorGroup).To(Equal("rack1"))
			Expect(got.Description).To(Equal(ptr("ünïcode ✓")))
			Expect(got.Reservation).To(BeNil())
			// Stored in UTC at microsecond precision, on both dialects.
			Expect(*got.InspectionStartedAt).To(Equal(started.UTC().Truncate(time.Microsecond)))
			Expect(got.InspectionStartedAt.Location()).To(Equal(time.UTC))
			Expect(got.CreatedAt).To(Equal(n.CreatedAt))
			// Unset JSON columns read back as empty objects, never nil.
			Expect(got.Extra).NotTo(BeNil())
			Expect(got.Extra).To(BeEmpty())
			Expect(got.CleanStep).NotTo(BeNil())

			byName, err := s.GetNodeByName(ctx, "node-1")
			Expect(err).NotTo(HaveOccurred())
			Expect(byName.UUID).To(Equal(n.UUID))
			byID, err := s.GetNodeByID(ctx, n.ID)
			Expect(err).NotTo(HaveOccurred())
			Expect(byID.UUID).To(Equal(n.UUID))
		})

		It("reads every nullable column back as written, set or NULL, each into its own value", func(ctx SpecContext) {
			s := store()
			at := time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)
			later := at.Add(time.Hour)
			full := &model.Node{Name: ptr("full"), Driver: "ipmi", InstanceUUID: ptr("5d8e7d2e-6c2f-4c7c-8fd8-0b8e3b0d4a12"),
				ChassisUUID: ptr("6d8e7d2e-6c2f-4c7c-8fd8-0b8e3b0d4a12"), PowerState: ptr("power on"),
				TargetPowerState: ptr("power off"), ProvisionState: ptr("active"), TargetProvisionState: ptr("deleted"),
				ProvisionUpdatedAt: &at, MaintenanceReason: ptr("why"), Fault: ptr("power failure"), LastError: ptr("boom"),
				ConductorAffinity: ptr(int64(7)), InspectionStartedAt: &at, InspectionFinishedAt: &later,
				ResourceClass: ptr("gold"), BIOSInterface: ptr("bios"), BootInterface: ptr("boot"),
				ConsoleInterface: ptr("console"), DeployInterface: ptr("deploy"), InspectInterface: ptr("inspect"),
				ManagementInterface: ptr("management"), NetworkInterface: ptr("network"), PowerInterface: ptr("power"),
				RAIDInterface: ptr("raid"), RescueInterface: ptr("rescue"), StorageInterface: ptr("storage"),
				VendorInterface: ptr("vendor"), AutomatedClean: ptr(true), ProtectedReason: ptr("keep"),
				Owner: ptr("owner"), Lessee: ptr("lessee"), Description: ptr(""), RetiredReason: ptr("old")}
			empty := &model.Node{Driver: "ipmi"}
			for _, n := range []*model.Node{full, empty} {
				Expect(s.CreateNode(ctx, n)).To(Succeed())
			}
			// What CreateNode stores for a nil JSON column or the
			// reservation (which only Reserve sets).
			want := func(n *model.Node) model.Node {
				w := *n
				for _, j := range []*model.JSONObject{&w.DriverInfo, &w.DriverInternalInfo, &w.Properties, &w.InstanceInfo,
					&w.Extra, &w.CleanStep, &w.DeployStep, &w.RAIDConfig, &w.TargetRAIDConfig} {
					if *j == nil {
						*j = model.JSONObject{}
					}
				}
				if w.Traits == nil {
					w.Traits = model.StringList{}
				}
				return w
			}
			for _, n := range []*model.Node{full, empty} {
				got, err := s.GetNode(ctx, n.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(*got).To(Equal(want(n)))
			}
			listed, err := s.ListNodes(ctx, NodeFilter{UUIDs: []string{full.UUID, empty.UUID}}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(listed).To(ConsistOf(want(full), want(empty)))

			got, err := s.GetNode(ctx, full.UUID)
			Expect(err).NotTo(HaveOccurred())
			*got.PowerState = "changed"
			*got.InspectionStartedAt = later
			Expect(*got.TargetPowerState).To(Equal("power off"))
			Expect(*got.ProvisionUpdatedAt).To(Equal(at))
		})

		It("reports missing nodes as NodeNotFound", func(ctx SpecContext) {
			s := store()
			_, err := s.GetNode(ctx, "1be26c0b-03f2-4d2e-ae87-c02d7f33c123")
			expectErr(err, errs.KindNodeNotFound, "Node 1be26c0b-03f2-4d2e-ae87-c02d7f33c123 could not be found.", http.StatusNotFound)
			_, err = s.GetNodeByName(ctx, "ghost")
			expectErr(err, errs.KindNodeNotFound, "Node ghost could not be found.", http.StatusNotFound)
			_, err = s.GetNodeByID(ctx, 424242)
			expectErr(err, errs.KindNodeNotFound, "Node 424242 could not be found.", http.StatusNotFound)
			expectErr(s.DestroyNode(ctx, "nope"), errs.KindNodeNotFound, "Node nope could not be found.", http.StatusNotFound)
			expectErr(s.TouchProvisioning(ctx, "nope"), errs.KindNodeNotFound, "Node nope could not be found.", http.StatusNotFound)
			expectErr(s.SaveNode(ctx, &model.Node{ID: 424242, UUID: "nope", Driver: "x"}), errs.KindNodeNotFound, "Node nope could not be found.", http.StatusNotFound)
		})

		It("queues concurrent writers instead of failing", func(ctx SpecContext) {
			s := store()
			errCh := make(chan error, 30)
			var wg sync.WaitGroup
			for i := range 30 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					n := newNode(fmt.Sprintf("c%d", i))
					if err := s.CreateNode(ctx, n); err != nil {
						errCh <- err
						return
					}
					n.ProvisionState = ptr("verifying")
					if err := s.SaveNode(ctx, n); err != nil {
						errCh <- err
						return
					}
					_, err := s.ReserveNode(ctx, n.UUID, "c", 1)
					errCh <- err
				}()
			}
			wg.Wait()
			close(errCh)
			for err := range errCh {
				Expect(err).NotTo(HaveOccurred())
			}
			verifying, err := s.ListNodes(ctx, NodeFilter{ProvisionStates: []string{"verifying"}, ReservedBy: []string{"c"}}, Page{}, []string{"provision_updated_at"})
			Expect(err).NotTo(HaveOccurred())
			Expect(verifying).To(HaveLen(30))
			for _, n := range verifying {
				Expect(n.ProvisionUpdatedAt).NotTo(BeNil())
			}
		})

		It("allows any number of unnamed nodes", func(ctx SpecContext) {
			s := store()
			Expect(s.CreateNode(ctx, newNode(""))).To(Succeed())
			Expect(s.CreateNode(ctx, newNode(""))).To(Succeed())
			Expect(countRows(ctx, s, "nodes")).To(Equal(int64(2)))
		})

		Describe("unique constraints", func() {
			var existing *model.Node
			BeforeEach(func(ctx SpecContext) {
				existing = newNode("taken")
				existing.InstanceUUID = ptr("0f2b8a9e-58a1-4c7e-9b58-7b1e7d1f0e01")
				Expect(store().CreateNode(ctx, existing)).To(Succeed())
			})

			It("maps a duplicate uuid to 409 AlreadyExists", func(ctx SpecContext) {
				n := newNode("other")
				n.UUID = existing.UUID
				err := store().CreateNode(ctx, n)
				expectErr(err, errs.KindAlreadyExists, fmt.Sprintf("A node with UUID %s already exists.", existing.UUID), http.StatusConflict)
				Expect(n.ID).To(BeZero())
				Expect(countRows(ctx, store(), "nodes")).To(Equal(int64(1)))
			})

			It("maps a duplicate name to 409 DuplicateName", func(ctx SpecContext) {
				err := store().CreateNode(ctx, newNode("taken"))
				expectErr(err, errs.KindDuplicateName, "A node with name taken already exists.", http.StatusConflict)
				Expect(countRows(ctx, store(), "nodes")).To(Equal(int64(1)))
			})

			It("maps a duplicate instance_uuid to 409", func(ctx SpecContext) {
				n := newNode("free")
				n.InstanceUUID = existing.InstanceUUID
				err := store().CreateNode(ctx, n)
				expectErr(err, errs.KindConflict, "Instance 0f2b8a9e-58a1-4c7e-9b58-7b1e7d1f0e01 is already associated with a node.", http.StatusConflict)
				Expect(countRows(ctx, store(), "nodes")).To(Equal(int64(1)))
			})

			It("maps violations on save, writing nothing of the failed update", func(ctx SpecContext) {
				s := store()
				n := newNode("mine")
				Expect(s.CreateNode(ctx, n)).To(Succeed())
				n.Name = ptr("taken")
				n.Driver = "redfish"
				expectErr(s.SaveNode(ctx, n), errs.KindDuplicateName, "A node with name taken already exists.", http.StatusConflict)
				n.Name = ptr("mine")
				n.InstanceUUID = existing.InstanceUUID
				expectErr(s.SaveNode(ctx, n), errs.KindConflict,
					"Instance 0f2b8a9e-58a1-4c7e-9b58-7b1e7d1f0e01 is already associated with a node.", http.StatusConflict)
				got, err := s.GetNode(ctx, n.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(got.Name).To(Equal(ptr("mine")))
				Expect(got.Driver).To(Equal("ipmi"))
				Expect(got.InstanceUUID).To(BeNil())
				Expect(got.UpdatedAt).To(BeNil())
			})
		})

		Describe("SaveNode", func() {
			It("writes all columns but uuid, created_at and reservation, and sets updated_at", func(ctx SpecContext) {
				s := store()
				n := newNode("n1")
				Expect(s.CreateNode(ctx, n)).To(Succeed())
				_, err := s.ReserveNode(ctx, n.UUID, "cond-1", 1)
				Expect(err).NotTo(HaveOccurred())

				created := n.CreatedAt
				n.Driver = "redfish"
				n.DriverInfo = model.JSONObject{"redfish_address": "https://bmc"}
				n.Extra = nil
				n.Maintenance = true
				n.LastError = ptr("boom")
				n.Reservation = nil // must not release the lock
				n.CreatedAt = time.Now().Add(-time.Hour)
				Expect(s.SaveNode(ctx, n)).To(Succeed())
				Expect(n.UpdatedAt).NotTo(BeNil())

				got, err := s.GetNode(ctx, n.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(got.Driver).To(Equal("redfish"))
				Expect(got.DriverInfo).To(Equal(model.JSONObject{"redfish_address": "https://bmc"}))
				Expect(got.Extra).To(BeEmpty())
				Expect(got.Maintenance).To(BeTrue())
				Expect(got.LastError).To(Equal(ptr("boom")))
				Expect(got.Reservation).To(Equal(ptr("cond-1")))
				Expect(got.CreatedAt).To(Equal(created))
				Expect(got.UpdatedAt).To(Equal(n.UpdatedAt))
				Expect(*got.UpdatedAt).To(BeTemporally("~", time.Now(), 5*time.Second))
			})

			It("bumps provision_updated_at only when provision_state changes", func(ctx SpecContext) {
				s := store()
				n := newNode("prov")
				Expect(s.CreateNode(ctx, n)).To(Succeed())
				Expect(n.ProvisionUpdatedAt).To(BeNil())

				n.Extra = model.JSONObject{"a": "b"}
				n.ProvisionUpdatedAt = ptr(time.Now().Add(-time.Hour))
				Expect(s.SaveNode(ctx, n)).To(Succeed())
				Expect(n.ProvisionUpdatedAt).To(BeNil(), "unchanged state keeps the stored value")

				n.ProvisionState = ptr("verifying")
				Expect(s.SaveNode(ctx, n)).To(Succeed())
				Expect(n.ProvisionUpdatedAt).NotTo(BeNil())
				first := *n.ProvisionUpdatedAt
				Expect(first).To(BeTemporally("~", time.Now(), 5*time.Second))

				time.Sleep(2 * time.Millisecond)
				n.LastError = ptr("still verifying")
				n.ProvisionUpdatedAt = nil
				Expect(s.SaveNode(ctx, n)).To(Succeed())
				got, err := s.GetNode(ctx, n.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(*got.ProvisionUpdatedAt).To(Equal(first))
				Expect(*got.UpdatedAt).To(BeTemporally(">", first))

				got.ProvisionState = ptr("manageable")
				Expect(s.SaveNode(ctx, got)).To(Succeed())
				Expect(*got.ProvisionUpdatedAt).To(BeTemporally(">", first))

				got.ProvisionState = nil
				Expect(s.SaveNode(ctx, got)).To(Succeed())
				again, err := s.GetNode(ctx, n.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(again.ProvisionState).To(BeNil())
				Expect(*again.ProvisionUpdatedAt).To(BeTemporally(">", first))
			})

			It("TouchProvisioning refreshes provision_updated_at", func(ctx SpecContext) {
				s := store()
				n := newNode("touch")
				Expect(s.CreateNode(ctx, n)).To(Succeed())
				Expect(s.TouchProvisioning(ctx, n.UUID)).To(Succeed())
				got, err := s.GetNode(ctx, n.UUID)
				Expect(err).NotTo(HaveOccurred())
				Expect(got.ProvisionUpdatedAt).NotTo(BeNil())
				Expect(*got.ProvisionUpdatedAt).To(BeTemporally("~", time.Now(), 5*time.Second))
				Expect(got.ProvisionState).To(Equal(ptr("enroll")))

				// A save from a copy read before the touch keeps the touch.
				n.LastError = ptr("x")
				Expect(s.SaveNode(ctx, n)).To(Succeed())
				Expect(n.ProvisionUpdatedAt).To(Equal(got.ProvisionUpdatedAt))
			})
		})

		It("DestroyNode removes the node and its ports, and nothing else", func(ctx SpecContext) {
			s := store()
			doomed, kept := newNode("doomed"), newNode("kept")
			Expect(s.CreateNode(ctx, doomed)).To(Succeed())
			Expect(s.CreateNode(ctx, kept)).To(Succeed())
			for i, owner := range []*model.Node{doomed, doomed, kept} {
				Expect(s.CreatePort(ctx, &model.Port{Address: fmt.Sprintf("52:54:00:00:00:%02x", i), NodeID: owner.ID})).To(Succeed())
			}
			Expect(s.DestroyNode(ctx, doomed.UUID)).To(Succeed())
			_, err := s.GetNode(ctx, doomed.UUID)
			Expect(errs.Is(err, errs.KindNodeNotFound)).To(BeTrue())
			ports, err := s.ListPorts(ctx, PortFilter{}, Page{}, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(ports).To(HaveLen(1))
			Expect(ports[0].NodeUUID).To(Equal(kept.UUID))
			Expect(countRows(ctx, s, "nodes")).To(Equal(int64(1)))
		})

		if backend == DialectMySQL {
			It("cannot leave ports without a node (foreign key)", func(ctx SpecContext) {
				s := store()
				n := newNode("fk")
				Expect(s.CreateNode(ctx, n)).To(Succeed())
				Expect(s.CreatePort(ctx, &model.Port{Address: "52:54:00:aa:bb:cc", NodeID: n.ID})).To(Succeed())
				Expect(s.db.WithContext(ctx).Exec("DELETE FROM nodes WHERE id = ?", n.ID).Error).To(HaveOccurred())
			})
		}
	})
}

func lockSpecs(store func() *Store) {
	Describe("node lock", func() {
		var n *model.Node
		BeforeEach(func(ctx SpecContext) {
			n = newNode("locky")
			Expect(store().CreateNode(ctx, n)).To(Succeed())
		})

		It("lets exactly one of many racing conductors win", func(ctx SpecContext) {
			s := store()
			const racers = 20
			var (
				wg      sync.WaitGroup
				mu      sync.Mutex
				winners []string
				losers  []error
			)
			start := make(chan struct{})
			for i := range racers {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					host := fmt.Sprintf("conductor-%02d", i)
					<-start
					got, err := s.ReserveNode(ctx, n.UUID, host, 1)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						losers = append(losers, err)
						return
					}
					Expect(got.Reservation).To(Equal(ptr(host)))
					winners = append(winners, host)
				}()
			}
			close(start)
			wg.Wait()
			Expect(winners).To(HaveLen(1))
			Expect(losers).To(HaveLen(racers - 1))
			for _, err := range losers {
				expectErr(err, errs.KindNodeLocked, fmt.Sprintf(
					"Node %s is locked by host %s, please retry after the current operation is completed.", n.UUID, winners[0]),
					http.StatusConflict)
			}
			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Reservation).To(Equal(ptr(winners[0])))
		})

		It("is not re-entrant: the holder itself gets NodeLocked", func(ctx SpecContext) {
			_, err := store().ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())
			_, err = store().ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(errs.Is(err, errs.KindNodeLocked)).To(BeTrue())
		})

		It("reports a missing node as NodeNotFound", func(ctx SpecContext) {
			_, err := store().ReserveNode(ctx, "missing", "c1", 1)
			expectErr(err, errs.KindNodeNotFound, "Node missing could not be found.", http.StatusNotFound)
		})

		It("releases only the holder's lock", func(ctx SpecContext) {
			s := store()
			_, err := s.ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())

			expectErr(s.ReleaseNode(ctx, n.UUID, "c2", 1), errs.KindNodeLocked,
				fmt.Sprintf("Node %s is locked by host c1, please retry after the current operation is completed.", n.UUID), http.StatusConflict)
			Expect(s.ReleaseNode(ctx, n.UUID, "c1", 1)).To(Succeed())
			got, err := s.GetNode(ctx, n.UUID)
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Reservation).To(BeNil())

			expectErr(s.ReleaseNode(ctx, n.UUID, "c1", 1), errs.KindInvalidState,
				fmt.Sprintf("Node %s found not to be locked on release", n.UUID), http.StatusConflict)

			_, err = s.ReserveNode(ctx, n.UUID, "c2", 1)
			Expect(err).NotTo(HaveOccurred())
		})

		It("treats releasing a deleted node as done", func(ctx SpecContext) {
			s := store()
			_, err := s.ReserveNode(ctx, n.UUID, "c1", 1)
			Expect(err).NotTo(HaveOccurred())
			Expect(s.DestroyNode(ctx, n.UUID)).To(Succeed())
			Expect(s.ReleaseNode(ctx, n.UUID, "c1", 1)).To(Succeed())
		})

		It("ReleaseReservationsOf clears every lock of one host", func(ctx SpecContext) {
			s := store()
			other := newNode("other")
			third := newNode("third")
			Expect(s.CreateNode(ctx, other)).To(Succeed())
			Expect(s.CreateNode(ctx, third)).To(Succeed())
			for _, r := range []struct{ uuid, host string }{{n.UUID, "dead"}, {other.UUID, "dead"}, {third.UUID, "alive"}} {
				_, err := s.ReserveNode(ctx, r.uuid, r.host, 1)
				Expect(err).NotTo(HaveOccurred())
			}
			cleared, err := s.ReleaseReservationsOf(ctx, "dead")
			Expect(err).NotTo(HaveOccurred())
			Expect(cleared).To(Equal(int64(2)))
			locked, err := s.ListNodes(ctx, NodeFilter{Reserved: ptr(true)}, Page{}, []string{"reservation"})
			Expect(err).NotTo(HaveOccurred())
			Expect(locked).To(HaveLen(1))
			Expect(locked[0].UUID).To(Equal(third.UUID))
			Expect(locked[0].Reservation).To(Equal(ptr("alive")))
		})
	})
}
