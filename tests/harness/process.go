package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Process is a started Ferric process. It runs in its own process group so
// that stopping it also stops anything it spawned, and only that.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
	once    sync.Once
	// killed is set by Kill: the exit status of a process the test killed
	// on purpose is not a failure to report.
	killed atomic.Bool
}

// Start runs bin with args, stdout and stderr appended to logPath.
func Start(name, bin string, args []string, logPath string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = childEnv()
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// Pdeathsig: if the test binary dies (timeout, ^C) its children go too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// childEnv is the test's environment without FERRIC_ variables: they
// override config files, and a developer's own settings must not redirect
// a suite's processes to another database or port.
func childEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FERRIC_") {
			out = append(out, kv)
		}
	}
	return out
}

// PID is the process id (also its process group id).
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Signal sends sig to the process group.
func (p *Process) Signal(sig syscall.Signal) error {
	if p.Exited() {
		return nil
	}
	err := syscall.Kill(-p.PID(), sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Kill is kill -9 of the process group, waiting until it is reaped.
func (p *Process) Kill() error {
	p.killed.Store(true)
	if err := p.Signal(syscall.SIGKILL); err != nil {
		return err
	}
	<-p.done
	return nil
}

// Stop asks the process to shut down (SIGTERM) and kills its group if it
// has not exited within grace. It returns the exit error, if any, of a
// process that stopped on its own terms.
func (p *Process) Stop(grace time.Duration) error {
	var err error
	p.once.Do(func() {
		if p.Exited() {
			if !p.killed.Load() {
				err = p.waitErr
			}
			return
		}
		if err = p.Signal(syscall.SIGTERM); err != nil {
			return
		}
		select {
		case <-p.done:
			err = p.waitErr
		case <-time.After(grace):
			err = fmt.Errorf("%s did not stop within %s of SIGTERM; killed", p.Name, grace)
			_ = p.Signal(syscall.SIGKILL)
			<-p.done
		}
	})
	return err
}

// LogTail returns the last n lines of the process's output.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
