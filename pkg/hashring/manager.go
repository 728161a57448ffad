package hashring

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferricbm/ferric/pkg/errs"
)

// Member is one live conductor's support for one hardware type.
type Member struct {
	Hostname       string
	ConductorGroup string
	HardwareType   string
	// Expires is when the conductor counts as dead unless it heartbeats
	// again (zero: never): no ring built with it outlives that moment.
	Expires time.Time
}

// snapshot is one immutable build of all rings; lookups read it without
// locking.
type snapshot struct {
	// rings[lower-cased group][hardware type]
	rings   map[string]map[string]*Ring
	drivers map[string][]string // hardware type -> hosts, any group
	hosts   []string
	built   time.Time
	// expires is the earliest expiry of its members: a ring must not send
	// work to a conductor past its heartbeat timeout, however recently it
	// was built.
	expires time.Time
}

// Manager caches the rings of all live conductors and rebuilds them every
// resetInterval, when a member's heartbeat expires (it may have died), or at
// once when a lookup misses (a conductor may just have registered). Mappings are therefore eventually consistent across
// processes, which is safe because state changes take the node lock.
// Safe for concurrent use.
type Manager struct {
	load          func(ctx context.Context) ([]Member, error)
	exponent      int
	resetInterval time.Duration

	current atomic.Pointer[snapshot]
	// rebuild serialises loads so that a burst of misses costs one load.
	rebuild sync.Mutex
}

// NewManager returns a manager that builds rings from load's members with
// 2^partitionExponent points per host. A resetInterval <= 0 disables
// caching: every lookup reloads.
func NewManager(load func(ctx context.Context) ([]Member, error), partitionExponent int, resetInterval time.Duration) *Manager {
	return &Manager{load: load, exponent: partitionExponent, resetInterval: resetInterval}
}

// Reset drops the cached rings; the next lookup rebuilds them.
func (m *Manager) Reset() { m.current.Store(nil) }

// Lookup returns the conductor that owns nodeUUID among those serving
// hardwareType in group. If no ring exists for that pair even after one
// rebuild it fails with NoValidHost (404; the API answers 400 where Ironic
// does), or TemporaryFailure (503) when no conductor is alive at all.
func (m *Manager) Lookup(ctx context.Context, group, hardwareType, nodeUUID string) (string, error) {
	group = strings.ToLower(group)
	snap, reloaded, err := m.fresh(ctx)
	if err != nil {
		return "", err
	}
	ring := snap.rings[group][hardwareType]
	if ring == nil && !reloaded {
		if snap, err = m.reload(ctx, snap); err != nil {
			return "", err
		}
		ring = snap.rings[group][hardwareType]
	}
	if ring == nil {
		if len(snap.hosts) == 0 {
			return "", errs.New(errs.KindTemporaryFailure, "Resource temporarily unavailable, please retry.")
		}
		return "", errs.New(errs.KindNoValidHost,
			"No conductor service registered which supports driver %s for conductor group \"%s\".", hardwareType, group).
			WithStatus(http.StatusNotFound)
	}
	host, _ := ring.Get(nodeUUID)
	return host, nil
}

// Hosts returns every distinct live conductor, sorted.
func (m *Manager) Hosts(ctx context.Context) ([]string, error) {
	snap, _, err := m.fresh(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Clone(snap.hosts), nil
}

// DriverHosts returns the live conductors serving hardwareType in any
// group, sorted: the candidates for driver-level calls that concern no node.
// It fails with DriverNotFound when there is none after one rebuild.
func (m *Manager) DriverHosts(ctx context.Context, hardwareType string) ([]string, error) {
	snap, reloaded, err := m.fresh(ctx)
	if err != nil {
		return nil, err
	}
	if len(snap.drivers[hardwareType]) == 0 && !reloaded {
		if snap, err = m.reload(ctx, snap); err != nil {
			return nil, err
		}
	}
	hosts := snap.drivers[hardwareType]
	if len(hosts) == 0 {
		return nil, errs.DriverNotFound(hardwareType)
	}
	return slices.Clone(hosts), nil
}

// fresh returns the cached snapshot, rebuilding it when absent or expired;
// reloaded tells the caller a miss needs no second rebuild.
func (m *Manager) fresh(ctx context.Context) (snap *snapshot, reloaded bool, err error) {
	snap = m.current.Load()
	if snap != nil && m.resetInterval > 0 && time.Since(snap.built) < m.resetInterval &&
		(snap.expires.IsZero() || time.Now().Before(snap.expires)) {
		return snap, false, nil
	}
	snap, err = m.reload(ctx, snap)
	return snap, true, err
}

// reload replaces seen with a new build, unless another caller already
// replaced it while this one waited for the lock.
func (m *Manager) reload(ctx context.Context, seen *snapshot) (*snapshot, error) {
	m.rebuild.Lock()
	defer m.rebuild.Unlock()
	if cur := m.current.Load(); cur != nil && cur != seen {
		return cur, nil
	}
	members, err := m.load(ctx)
	if err != nil {
		return nil, fmt.Errorf("load hash ring members: %w", err)
	}
	snap := build(members, m.exponent)
	m.current.Store(snap)
	return snap, nil
}

func build(members []Member, exponent int) *snapshot {
	type key struct{ group, hardwareType string }
	byKey := map[key][]string{}
	byDriver := map[string][]string{}
	var all []string
	var expires time.Time
	for _, mb := range members {
		if !mb.Expires.IsZero() && (expires.IsZero() || mb.Expires.Before(expires)) {
			expires = mb.Expires
		}
		k := key{strings.ToLower(mb.ConductorGroup), mb.HardwareType}
		byKey[k] = append(byKey[k], mb.Hostname)
		byDriver[mb.HardwareType] = append(byDriver[mb.HardwareType], mb.Hostname)
		all = append(all, mb.Hostname)
	}
	snap := &snapshot{
		rings:   map[string]map[string]*Ring{},
		drivers: make(map[string][]string, len(byDriver)),
		hosts:   distinct(all),
		built:   time.Now(),
		expires: expires,
	}
	for k, hosts := range byKey {
		if snap.rings[k.group] == nil {
			snap.rings[k.group] = map[string]*Ring{}
		}
		snap.rings[k.group][k.hardwareType] = New(distinct(hosts), exponent)
	}
	for hw, hosts := range byDriver {
		snap.drivers[hw] = distinct(hosts)
	}
	return snap
}

func distinct(hosts []string) []string {
	out := slices.Clone(hosts)
	slices.Sort(out)
	return slices.Compact(out)
}
