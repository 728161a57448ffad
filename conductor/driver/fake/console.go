package fake

import (
	"context"

	"github.com/ferricbm/ferric/conductor/driver"
)

// Operations of the console interface faults can be injected into.
const (
	OpStartConsole Op = "console.start_console"
	OpStopConsole  Op = "console.stop_console"
)

// ConsoleRunning reports whether the node's fake console is started.
func (h *Hardware) ConsoleRunning(nodeUUID string) bool {
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	return h.rec.consoles[nodeUUID]
}

type console struct{ h *Hardware }

func (c *console) Validate(context.Context, driver.TaskContext) error { return nil }

func (c *console) StartConsole(ctx context.Context, t driver.TaskContext) error {
	if err := c.h.fault(ctx, t, OpStartConsole); err != nil {
		return err
	}
	c.h.rec.mu.Lock()
	defer c.h.rec.mu.Unlock()
	c.h.rec.consoles[t.Node().UUID] = true
	return nil
}

func (c *console) StopConsole(ctx context.Context, t driver.TaskContext) error {
	if err := c.h.fault(ctx, t, OpStopConsole); err != nil {
		return err
	}
	c.h.rec.mu.Lock()
	defer c.h.rec.mu.Unlock()
	delete(c.h.rec.consoles, t.Node().UUID)
	return nil
}

func (c *console) GetConsole(_ context.Context, t driver.TaskContext) (map[string]any, error) {
	return map[string]any{"type": "fake", "url": "fake://console/" + t.Node().UUID}, nil
}
