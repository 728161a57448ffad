package conductor

import "time"

// Kill stops the conductor the way a crash does: no more keepalive, RPCs
// or periodic tasks, but nothing is cleaned up — its locks stay in the
// database and its row goes stale. Running workers are left alone.
func (c *Conductor) Kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	c.haltIntake()
	c.stopKeepalive()
}

// WaitWorkers waits for the workers of a killed conductor.
func (c *Conductor) WaitWorkers() {
	c.pool.Stop()
}

// LapseHeartbeat makes the conductor's last heartbeat look older than its
// heartbeat timeout, as after a SIGSTOP that outlasted it: the next
// keepalive tick finds it lapsed.
func (c *Conductor) LapseHeartbeat() {
	c.locker.Beat(time.Now().Add(-2 * c.cfg.HeartbeatTimeout))
}
