package task

import "context"

// Cleaner is the conductor's cleaning, which a deploy interface moves on
// from a ramdisk callback through the task (driver.TaskControl). It lives
// in the conductor, above the task, because it runs the clean steps.
type Cleaner interface {
	SetCleanSteps(ctx context.Context, t *Task) error
	ContinueCleaning(ctx context.Context, t *Task, rerunCurrent bool) error
	FailCleaning(ctx context.Context, t *Task, msg string) error
}

// SetCleanSteps computes the steps of the clean from the driver's current
// ones (a manual clean's are checked against them).
func (t *Task) SetCleanSteps(ctx context.Context) error {
	return t.m.cleaner.SetCleanSteps(ctx, t)
}

// ContinueCleaning runs the next clean step in this worker.
func (t *Task) ContinueCleaning(ctx context.Context, rerunCurrent bool) error {
	t.cleanMovedOn = true
	return t.m.cleaner.ContinueCleaning(ctx, t, rerunCurrent)
}

// FailCleaning ends the clean in clean failed.
func (t *Task) FailCleaning(ctx context.Context, msg string) error {
	t.cleanMovedOn = true
	return t.m.cleaner.FailCleaning(ctx, t, msg)
}

// CleanMovedOn reports whether a driver continued or failed the clean
// through this task: the node was saved and may be released, so the
// caller must not save it again.
func (t *Task) CleanMovedOn() bool { return t.cleanMovedOn }
