// Package periodic runs the conductor's periodic jobs, each on its own
// ticker, and stops them all together.
package periodic

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/logging"
)

// Job is one periodic task. An Interval of zero or less disables it.
type Job struct {
	Name     string
	Interval time.Duration
	Run      func(ctx context.Context)
}

// Runner runs jobs until stopped.
type Runner struct {
	log    logrus.FieldLogger
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start runs every enabled job once per interval, the first run one
// interval after start. A run never overlaps the previous run of the same
// job; a panicking run is logged and the job goes on.
func Start(ctx context.Context, log logrus.FieldLogger, jobs ...Job) *Runner {
	ctx, cancel := context.WithCancel(ctx)
	r := &Runner{log: log, cancel: cancel}
	for _, j := range jobs {
		if j.Interval <= 0 {
			log.WithField("job", j.Name).Info("Periodic task disabled")
			continue
		}
		r.wg.Add(1)
		go r.loop(ctx, j)
	}
	return r
}

func (r *Runner) loop(ctx context.Context, j Job) {
	defer r.wg.Done()
	ticker := time.NewTicker(j.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case tick := <-ticker.C:
			r.runOnce(ctx, j, tick)
		}
	}
}

// runOnce runs j and logs how long it took and how late it began after
// its tick: an operator (and the scale bench) sees a task that no longer
// fits its interval.
//
// Each run is its own piece of work with its own request id, in ctx with a
// logger tagged with it and the job (logging.FromContext): the lines of one
// power sync, and of the nodes it touched, can be told from the next's.
func (r *Runner) runOnce(ctx context.Context, j Job, tick time.Time) {
	start := time.Now()
	id := logging.NewRequestID()
	log := r.log.WithFields(logrus.Fields{"job": j.Name, logging.RequestIDKey: id})
	defer func() {
		log.WithFields(logrus.Fields{"took": time.Since(start).Seconds(),
			"late": start.Sub(tick).Seconds(), "interval": j.Interval.Seconds()}).Info("Periodic task run")
	}()
	defer func() {
		if p := recover(); p != nil {
			log.WithField("stack", string(debug.Stack())).Errorf("Periodic task panicked: %v", p)
		}
	}()
	j.Run(logging.NewContext(logging.ContextWithRequestID(ctx, id), log))
}

// Stop cancels the jobs and waits for running ones to return.
func (r *Runner) Stop() {
	r.cancel()
	r.wg.Wait()
}
