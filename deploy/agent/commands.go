package agent

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/ferricbm/ferric/pkg/secrets"
)

// Command statuses, as IPA reports them.
const (
	StatusRunning              = "RUNNING"
	StatusSucceeded            = "SUCCEEDED"
	StatusFailed               = "FAILED"
	StatusCleanVersionMismatch = "CLEAN_VERSION_MISMATCH"
)

// RESTError is IPA's error shape, used both in HTTP error responses and in a failed
// command's command_error.
type RESTError struct {
	Type    string `json:"type"`
	Code    int    `json:"code"`
	Message string `json:"message"`
	Details string `json:"details"`
}

func (e *RESTError) Error() string { return e.Message + ": " + e.Details }

func commandExecutionError(details string) *RESTError {
	return &RESTError{Type: "CommandExecutionError", Code: http.StatusInternalServerError,
		Message: "Command execution failed", Details: details}
}

func invalidCommand(details string) *RESTError {
	return &RESTError{Type: "InvalidCommandError", Code: http.StatusBadRequest, Message: "Invalid command", Details: details}
}

func notFound(kind, id string) *RESTError {
	return &RESTError{Type: "RequestedObjectNotFoundError", Code: http.StatusNotFound, Message: "Object not found",
		Details: fmt.Sprintf("%s with id %s not found.", kind, id)}
}

// errVersionMismatch marks a clean step refused because the conductor's cached steps
// come from other hardware manager versions; the command ends CLEAN_VERSION_MISMATCH.
var errVersionMismatch = errors.New("hardware manager version mismatch")

// Result is one command as GET /v1/commands shows it.
type Result struct {
	ID            string         `json:"id"`
	CommandName   string         `json:"command_name"`
	CommandParams map[string]any `json:"command_params"`
	CommandStatus string         `json:"command_status"`
	CommandError  *RESTError     `json:"command_error"`
	CommandResult any            `json:"command_result"`
}

// command is a registered extension command: run returns the command_result value;
// progress, for async commands, publishes a partial command_result while it runs.
type command struct {
	async bool
	run   func(ctx context.Context, params map[string]any, progress func(any)) (any, error)
}

// commandLog runs commands one at a time and keeps every result, in execution order.
type commandLog struct {
	mu       sync.Mutex
	results  []*entry
	byID     map[string]*entry
	commands map[string]command
	// finished is told about every async command that ends (the agent heartbeats
	// at once, so the conductor notices quickly).
	finished func()
}

type entry struct {
	res  Result
	done chan struct{}
}

func newCommandLog(commands map[string]command, finished func()) *commandLog {
	return &commandLog{byID: map[string]*entry{}, commands: commands, finished: finished}
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// start validates name, refuses to run beside an unfinished command, records the
// command as RUNNING and runs it: in the caller for sync commands, in the
// background for async ones.
func (l *commandLog) start(ctx context.Context, name string, params map[string]any) (*entry, error) {
	ext, cmdName, ok := strings.Cut(name, ".")
	if !ok || ext == "" || cmdName == "" {
		return nil, invalidCommand("Command name must be of the form <extension>.<name>")
	}
	cmd, ok := l.commands[name]
	if !ok {
		if !l.hasExtension(ext) {
			return nil, notFound("Extension", ext)
		}
		return nil, invalidCommand(fmt.Sprintf("Unknown command: %s", name))
	}
	if params == nil {
		params = map[string]any{}
	}
	l.mu.Lock()
	if n := len(l.results); n > 0 {
		select {
		case <-l.results[n-1].done:
		default:
			last := l.results[n-1].res.CommandName
			l.mu.Unlock()
			return nil, &RESTError{Type: "AgentIsBusy", Code: http.StatusConflict, Message: "Agent is busy",
				Details: "executing command " + last}
		}
	}
	// The API serving results is unauthenticated, so parameters are shown masked
	// (a node dict may carry BMC credentials); the command itself gets them as sent.
	e := &entry{res: Result{ID: newID(), CommandName: cmdName, CommandParams: secrets.Mask(params), CommandStatus: StatusRunning},
		done: make(chan struct{})}
	l.results = append(l.results, e)
	l.byID[e.res.ID] = e
	l.mu.Unlock()

	progress := func(v any) {
		l.mu.Lock()
		e.res.CommandResult = v
		l.mu.Unlock()
	}
	if !cmd.async {
		res, err := safeRun(ctx, cmd, params, progress)
		l.finish(e, res, err)
		return e, nil
	}
	go func() {
		res, err := safeRun(context.WithoutCancel(ctx), cmd, params, progress)
		l.finish(e, res, err)
		if l.finished != nil {
			l.finished()
		}
	}()
	return e, nil
}

// safeRun turns a panic into a failed command: a command left RUNNING would keep
// the agent busy for good.
func safeRun(ctx context.Context, cmd command, params map[string]any, progress func(any)) (res any, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("command panicked: %v", p)
		}
	}()
	return cmd.run(ctx, params, progress)
}

func (l *commandLog) hasExtension(ext string) bool {
	for name := range l.commands {
		if strings.HasPrefix(name, ext+".") {
			return true
		}
	}
	return false
}

func (l *commandLog) finish(e *entry, res any, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer close(e.done)
	if s, ok := res.(string); ok {
		res = map[string]any{"result": e.res.CommandName + ": " + s}
	}
	var rest *RESTError
	switch {
	case err == nil:
		e.res.CommandStatus, e.res.CommandResult = StatusSucceeded, res
	case errors.Is(err, errVersionMismatch):
		e.res.CommandStatus, e.res.CommandResult = StatusCleanVersionMismatch, nil
		e.res.CommandError = &RESTError{Type: "VersionMismatch", Code: http.StatusInternalServerError,
			Message: "Hardware managers version mismatch, reload agent with correct version", Details: err.Error()}
	case errors.As(err, &rest):
		e.res.CommandStatus, e.res.CommandResult, e.res.CommandError = StatusFailed, nil, rest
	default:
		e.res.CommandStatus, e.res.CommandResult, e.res.CommandError = StatusFailed, nil, commandExecutionError(err.Error())
	}
}

// snapshot copies an entry's result under the lock.
func (l *commandLog) snapshot(e *entry) Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	return e.res
}

func (l *commandLog) get(id string) (*entry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.byID[id]
	return e, ok
}

func (l *commandLog) list() []Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Result, len(l.results))
	for i, e := range l.results {
		out[i] = e.res
	}
	return out
}
