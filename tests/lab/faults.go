package lab

import (
	"fmt"
	"syscall"
)

// KillAgent kills the node's running ramdisk, agent and tgtd, without the
// BMC noticing: the node stays powered on and nothing on it calls back any
// more, as when a ramdisk hangs or crashes. Powering the node off later
// cleans up as usual.
func (n *Node) KillAgent() error {
	n.mu.Lock()
	p := n.agent
	n.mu.Unlock()
	if p == nil {
		return fmt.Errorf("lab: no ramdisk runs on %s", n.Name)
	}
	// The agent leads its own process group, which holds its tgtd.
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("lab: kill the ramdisk of %s: %w", n.Name, err)
	}
	<-p.exited
	return nil
}
