package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/transport"
)

// Task states that end a task.
const (
	TaskCompleted = "Completed"
	TaskException = "Exception"
	TaskKilled    = "Killed"
	TaskCancelled = "Cancelled"
)

// action POSTs an action and waits for it to finish.
func (c *Client) action(ctx context.Context, op, target string, body any) error {
	resp, err := c.do(ctx, op, http.MethodPost, target, body)
	if err != nil {
		return err
	}
	return c.finish(ctx, op, resp)
}

// finish waits for the task a 202 Accepted points to; other successful
// answers are the end of the operation already.
func (c *Client) finish(ctx context.Context, op string, resp *transport.Response) error {
	if resp.Status != http.StatusAccepted {
		return nil
	}
	monitor := resp.Header.Get("Location")
	if monitor == "" {
		return nil
	}
	return c.waitTask(ctx, op, monitor)
}

type task struct {
	TaskState string `json:"TaskState"`
	Messages  []struct {
		Message string `json:"Message"`
	} `json:"Messages"`
}

// waitTask reads the task monitor until the task ends. A monitor answers
// 202 while the task runs and then either the task, whose TaskState says
// how it ended, or the action's own answer.
func (c *Client) waitTask(ctx context.Context, op, monitor string) error {
	for {
		resp, err := c.do(ctx, op+": read task monitor", http.MethodGet, monitor, nil)
		if err != nil {
			return err
		}
		var t task
		if len(resp.Body) > 0 {
			if err := json.Unmarshal(resp.Body, &t); err != nil {
				return fmt.Errorf("Redfish %s: unreadable task: %w", op, err)
			}
		}
		switch {
		case t.TaskState == TaskException || t.TaskState == TaskKilled || t.TaskState == TaskCancelled:
			e := &TaskError{Op: op, State: t.TaskState}
			for _, m := range t.Messages {
				e.Messages = append(e.Messages, m.Message)
			}
			return e
		case t.TaskState == TaskCompleted:
			return nil
		case resp.Status != http.StatusAccepted && t.TaskState == "":
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("Redfish %s: %w: the task did not finish before the operation's deadline", op, transport.ErrTimeout)
			}
			return fmt.Errorf("Redfish %s: %w", op, ctx.Err())
		case <-time.After(c.cfg.TaskPoll):
		}
	}
}
