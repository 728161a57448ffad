package hashring_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/hashring"
)

// registry stands in for the conductor table: members can change between
// loads and loads are counted.
type registry struct {
	mu      sync.Mutex
	members []hashring.Member
	err     error
	loads   atomic.Int32
}

func (r *registry) set(m ...hashring.Member) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.members = m
}

func (r *registry) load(context.Context) ([]hashring.Member, error) {
	r.loads.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hashring.Member(nil), r.members...), r.err
}

var _ = Describe("Manager", func() {
	var (
		reg *registry
		ctx context.Context
	)

	BeforeEach(func() {
		reg = &registry{}
		ctx = context.Background()
	})

	It("routes a node like a ring of the hosts serving its group and hardware type", func() {
		reg.set(
			hashring.Member{Hostname: "c1", ConductorGroup: "", HardwareType: "ipmi"},
			hashring.Member{Hostname: "c2", ConductorGroup: "", HardwareType: "ipmi"},
			hashring.Member{Hostname: "c3", ConductorGroup: "", HardwareType: "ilo"},
			hashring.Member{Hostname: "c4", ConductorGroup: "rack1", HardwareType: "ipmi"},
		)
		m := hashring.NewManager(reg.load, 5, time.Hour)
		ring := hashring.New([]string{"c1", "c2"}, 5)
		for _, k := range keys(200) {
			want, _ := ring.Get(k)
			got, err := m.Lookup(ctx, "", "ipmi", k)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(want))
		}
		host, err := m.Lookup(ctx, "RACK1", "ipmi", "any")
		Expect(err).NotTo(HaveOccurred())
		Expect(host).To(Equal("c4"))
		Expect(reg.loads.Load()).To(Equal(int32(1)))
	})

	It("lower-cases member groups too", func() {
		reg.set(hashring.Member{Hostname: "c1", ConductorGroup: "Rack1", HardwareType: "ipmi"})
		m := hashring.NewManager(reg.load, 5, time.Hour)
		host, err := m.Lookup(ctx, "rack1", "ipmi", "n")
		Expect(err).NotTo(HaveOccurred())
		Expect(host).To(Equal("c1"))
	})

	It("rebuilds once on a miss and finds a newly registered conductor", func() {
		reg.set(hashring.Member{Hostname: "c1", HardwareType: "ipmi"})
		m := hashring.NewManager(reg.load, 5, time.Hour)
		_, err := m.Lookup(ctx, "", "ipmi", "n")
		Expect(err).NotTo(HaveOccurred())

		reg.set(hashring.Member{Hostname: "c1", HardwareType: "ipmi"}, hashring.Member{Hostname: "c2", HardwareType: "redfish"})
		host, err := m.Lookup(ctx, "", "redfish", "n")
		Expect(err).NotTo(HaveOccurred())
		Expect(host).To(Equal("c2"))
		Expect(reg.loads.Load()).To(Equal(int32(2)))
	})

	It("answers NoValidHost (404) when no conductor serves the pair", func() {
		reg.set(hashring.Member{Hostname: "c1", HardwareType: "ipmi"})
		m := hashring.NewManager(reg.load, 5, time.Hour)
		Expect(m.Hosts(ctx)).To(Equal([]string{"c1"}))
		_, err := m.Lookup(ctx, "Rack9", "ipmi", "n")
		Expect(errs.Is(err, errs.KindNoValidHost)).To(BeTrue())
		Expect(errs.Status(err)).To(Equal(http.StatusNotFound))
		Expect(errs.Message(err)).To(Equal(`No conductor service registered which supports driver ipmi for conductor group "rack9".`))
		Expect(reg.loads.Load()).To(Equal(int32(2)), "one initial build and one rebuild for the miss")
	})

	It("answers TemporaryFailure (503) when no conductor is alive", func() {
		m := hashring.NewManager(reg.load, 5, time.Hour)
		_, err := m.Lookup(ctx, "", "ipmi", "n")
		Expect(errs.Is(err, errs.KindTemporaryFailure)).To(BeTrue())
		Expect(errs.Status(err)).To(Equal(http.StatusServiceUnavailable))
		Expect(reg.loads.Load()).To(Equal(int32(1)), "a build made by this very lookup is not repeated")
	})

	It("reports load failures as internal errors", func() {
		reg.err = errors.New("database is gone")
		m := hashring.NewManager(reg.load, 5, time.Hour)
		_, err := m.Lookup(ctx, "", "ipmi", "n")
		Expect(err).To(MatchError(ContainSubstring("database is gone")))
		Expect(errs.Status(err)).To(Equal(http.StatusInternalServerError))
	})

	It("serves from cache until the reset interval passes, then drops dead conductors", func() {
		reg.set(hashring.Member{Hostname: "c1", HardwareType: "ipmi"}, hashring.Member{Hostname: "c2", HardwareType: "ipmi"})
		// Long enough that the two reads below fall within one interval
		// even on a loaded machine.
		const interval = 2 * time.Second
		m := hashring.NewManager(reg.load, 5, interval)
		Expect(m.Hosts(ctx)).To(Equal([]string{"c1", "c2"}))

		reg.set(hashring.Member{Hostname: "c2", HardwareType: "ipmi"})
		Expect(m.Hosts(ctx)).To(Equal([]string{"c1", "c2"}))
		Expect(reg.loads.Load()).To(Equal(int32(1)))

		time.Sleep(interval + 50*time.Millisecond)
		Expect(m.Hosts(ctx)).To(Equal([]string{"c2"}))
		for _, k := range keys(50) {
			Expect(m.Lookup(ctx, "", "ipmi", k)).To(Equal("c2"))
		}
		Expect(reg.loads.Load()).To(Equal(int32(2)))
	})

	It("drops a member whose heartbeat expires within the reset interval", func() {
		// Long enough that the first reads fall before it even on a loaded
		// machine.
		expires := time.Now().Add(time.Second)
		reg.set(hashring.Member{Hostname: "c1", HardwareType: "ipmi", Expires: expires},
			hashring.Member{Hostname: "c2", HardwareType: "ipmi", Expires: expires.Add(time.Hour)})
		m := hashring.NewManager(reg.load, 5, time.Hour)
		Expect(m.Hosts(ctx)).To(Equal([]string{"c1", "c2"}))

		// c1 stops heartbeating: the registry no longer lists it, but until
		// its heartbeat expires the cached rings may still use it.
		reg.set(hashring.Member{Hostname: "c2", HardwareType: "ipmi", Expires: expires.Add(time.Hour)})
		Expect(m.Hosts(ctx)).To(Equal([]string{"c1", "c2"}))
		Expect(reg.loads.Load()).To(Equal(int32(1)))

		time.Sleep(time.Until(expires) + 20*time.Millisecond)
		for _, k := range keys(50) {
			Expect(m.Lookup(ctx, "", "ipmi", k)).To(Equal("c2"))
		}
		Expect(reg.loads.Load()).To(Equal(int32(2)))
	})

	It("rebuilds after Reset", func() {
		reg.set(hashring.Member{Hostname: "c1", HardwareType: "ipmi"})
		m := hashring.NewManager(reg.load, 5, time.Hour)
		Expect(m.Hosts(ctx)).To(Equal([]string{"c1"}))
		reg.set(hashring.Member{Hostname: "c9", HardwareType: "ipmi"})
		m.Reset()
		Expect(m.Hosts(ctx)).To(Equal([]string{"c9"}))
	})

	It("lists distinct hosts, and hosts per hardware type across groups", func() {
		reg.set(
			hashring.Member{Hostname: "c2", ConductorGroup: "a", HardwareType: "ipmi"},
			hashring.Member{Hostname: "c1", ConductorGroup: "b", HardwareType: "ipmi"},
			hashring.Member{Hostname: "c1", ConductorGroup: "b", HardwareType: "ilo"},
		)
		m := hashring.NewManager(reg.load, 5, time.Hour)
		Expect(m.Hosts(ctx)).To(Equal([]string{"c1", "c2"}))
		Expect(m.DriverHosts(ctx, "ipmi")).To(Equal([]string{"c1", "c2"}))
		Expect(m.DriverHosts(ctx, "ilo")).To(Equal([]string{"c1"}))
		_, err := m.DriverHosts(ctx, "redfish")
		Expect(errs.Is(err, errs.KindDriverNotFound)).To(BeTrue())
		Expect(errs.Status(err)).To(Equal(http.StatusNotFound))
	})

	It("coalesces concurrent rebuilds and stays consistent under concurrent use", func() {
		reg.set(hashring.Member{Hostname: "c1", HardwareType: "ipmi"}, hashring.Member{Hostname: "c2", HardwareType: "ipmi"})
		m := hashring.NewManager(reg.load, 5, time.Hour)
		ring := hashring.New([]string{"c1", "c2"}, 5)
		ks := keys(64)
		var wg sync.WaitGroup
		var resets atomic.Int32
		for g := range 16 {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for i, k := range ks {
					if (g+i)%16 == 0 {
						resets.Add(1)
						m.Reset()
					}
					want, _ := ring.Get(k)
					got, err := m.Lookup(ctx, "", "ipmi", k)
					Expect(err).NotTo(HaveOccurred())
					Expect(got).To(Equal(want))
				}
			}()
		}
		wg.Wait()
		// Without coalescing every goroutine that saw a reset would load.
		Expect(reg.loads.Load()).To(BeNumerically("<=", resets.Load()+1))
	})
})
