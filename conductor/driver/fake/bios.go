package fake

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/ferricbm/ferric/conductor/driver"
)

// OpBIOS reads the BIOS settings, for fault injection.
const OpBIOS Op = "bios.settings"

// defaultBIOS is what every fake machine's BIOS holds until a test
// changes it.
var defaultBIOS = map[string]string{"BootMode": "Uefi", "ProcVirtualization": "Enabled"}

// bios is the simulated firmware settings of the fleet.
type bios struct {
	mu       sync.Mutex
	settings map[string]map[string]string
}

// SetBIOSSetting changes one BIOS setting of a node, as someone in the
// machine's setup screen would.
func (h *Hardware) SetBIOSSetting(nodeUUID, name, value string) {
	h.bios.mu.Lock()
	defer h.bios.mu.Unlock()
	if h.bios.settings == nil {
		h.bios.settings = map[string]map[string]string{}
	}
	s, ok := h.bios.settings[nodeUUID]
	if !ok {
		s = maps.Clone(defaultBIOS)
		h.bios.settings[nodeUUID] = s
	}
	s[name] = value
}

type biosIface struct{ h *Hardware }

func (b *biosIface) Validate(context.Context, driver.TaskContext) error { return nil }

func (b *biosIface) Settings(ctx context.Context, t driver.TaskContext) ([]driver.BIOSSetting, error) {
	if err := b.h.fault(ctx, t, OpBIOS); err != nil {
		return nil, err
	}
	b.h.bios.mu.Lock()
	s, ok := b.h.bios.settings[t.Node().UUID]
	if !ok {
		s = defaultBIOS
	}
	out := make([]driver.BIOSSetting, 0, len(s))
	for _, name := range slices.Sorted(maps.Keys(s)) {
		out = append(out, driver.BIOSSetting{Name: name, Value: s[name]})
	}
	b.h.bios.mu.Unlock()
	return out, nil
}
