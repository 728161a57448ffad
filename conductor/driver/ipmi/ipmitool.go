package ipmi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/errs"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// KindIPMIFailure is Ironic's IPMIFailure: a BMC command that did not
// work. pkg/errs has no status for it, so it answers 500 as in Ironic.
const KindIPMIFailure errs.Kind = "IPMIFailure"

// retryable are ipmitool error texts of failures that go away by
// themselves: a BMC out of sessions or still booting, a lost packet.
var retryable = []string{
	"insufficient resources for session",
	"Node busy",
	"Timeout",
	"Out of space",
	"BMC initialization in progress",
}

// noise are the lines ipmitool -v prints on every call; they say nothing
// about a failure.
var noise = []string{
	"Loading IANA PEN Registry",
	"Running Get VSO Capabilities",
	"Invalid completion code received: Invalid command",
	"Discovered IPMB address",
	"Get HPM.x Capabilities request failed",
}

// ipmitool runs ipmitool commands against BMCs: one command per BMC at a
// time, at most one every min_command_interval, with the password in a
// private file that exists only while the command runs.
type ipmitool struct {
	cfg  config.IPMI
	path string
	log  logrus.FieldLogger

	mu    sync.Mutex
	slots map[string]*slot
}

// slot serialises and paces the commands sent to one BMC.
type slot struct {
	turn chan struct{}
	last time.Time
}

func newIPMItool(cfg config.IPMI, path string, log logrus.FieldLogger) *ipmitool {
	return &ipmitool{cfg: cfg, path: path, log: log, slots: map[string]*slot{}}
}

func (t *ipmitool) slot(target string) *slot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.slots[target]
	if !ok {
		s = &slot{turn: make(chan struct{}, 1)}
		t.slots[target] = s
	}
	return s
}

// run executes one ipmitool command (e.g. "power", "status") and returns
// its standard output. Transient failures are retried until [ipmi]
// command_retry_timeout, which also bounds the whole call: an ipmitool
// still running then is killed with its process group.
func (t *ipmitool) run(parent context.Context, node string, b bmcInfo, command ...string) (string, error) {
	ctx, cancel := context.WithTimeout(parent, t.cfg.CommandRetryTimeout)
	defer cancel()
	log := logging.FromContext(ctx, t.log).WithFields(logrus.Fields{"node": node, "bmc": b.target(), "command": strings.Join(command, " ")})
	for attempt := 1; ; attempt++ {
		out, stderr, err := t.once(ctx, b, command)
		if err == nil {
			return out, nil
		}
		if parent.Err() != nil {
			// The caller gave up (shutdown, its own deadline): not the BMC's fault.
			return "", fmt.Errorf("ipmitool %s: %w", strings.Join(command, " "), parent.Err())
		}
		detail := t.describe(ctx, b, err, stderr)
		if ctx.Err() == nil && t.transient(stderr) {
			log.WithField("attempt", attempt).Warnf("IPMI command failed, retrying: %s", detail)
			continue
		}
		log.Errorf("IPMI command failed: %s", detail)
		return "", &errs.Error{
			Kind:    KindIPMIFailure,
			Message: fmt.Sprintf("IPMI call failed: %s. %s", strings.Join(command, " "), detail),
		}
	}
}

// once waits for the BMC's turn and runs ipmitool one time.
func (t *ipmitool) once(ctx context.Context, b bmcInfo, command []string) (stdout, stderr string, err error) {
	s := t.slot(b.target())
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return "", "", ctx.Err()
	}
	defer func() {
		s.last = time.Now()
		<-s.turn
	}()
	if wait := time.Until(s.last.Add(t.cfg.MinCommandInterval)); wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return "", "", ctx.Err()
		}
	}

	pwFile, err := writePasswordFile(b.Password)
	if err != nil {
		return "", "", err
	}
	defer os.Remove(pwFile)

	cmd := exec.CommandContext(ctx, t.path, t.args(b, pwFile, command)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// ipmitool runs in its own process group, killed as a whole when the
	// call's time is up, so nothing it started outlives the call.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && strings.Contains(quote(errOut.String()), " failed: ") {
		err = errSilentFailure
	}
	return out.String(), errOut.String(), err
}

// errSilentFailure: some ipmitool commands (chassis bootdev among them)
// report a refused request on stderr and still exit 0.
var errSilentFailure = errors.New("The BMC refused the request")

func (t *ipmitool) args(b bmcInfo, pwFile string, command []string) []string {
	iface := "lanplus"
	if b.Protocol == "1.5" {
		iface = "lan"
	}
	// -v adds the reason to a failed session ("RAKP 2 HMAC is invalid")
	// on stderr; standard output stays the same.
	args := []string{"-v", "-I", iface, "-H", b.Address, "-p", strconv.Itoa(b.Port), "-L", b.PrivLevel}
	if iface == "lanplus" {
		suite := t.cfg.CipherSuite
		if b.CipherSuite >= 0 {
			suite = b.CipherSuite
		}
		args = append(args, "-C", strconv.Itoa(suite))
	}
	if b.Username != "" {
		args = append(args, "-U", b.Username)
	}
	connect := max(int(t.cfg.ConnectTimeout/time.Second), 1)
	tries := 1
	if t.cfg.UseIpmitoolRetries {
		tries = max(int(t.cfg.CommandRetryTimeout/t.cfg.ConnectTimeout), 1)
	}
	args = append(args, "-N", strconv.Itoa(connect), "-R", strconv.Itoa(tries), "-f", pwFile)
	return append(args, command...)
}

// writePasswordFile puts the password where only this user can read it;
// ipmitool never sees it on its command line. An empty password is
// written as a NUL byte: with an empty file ipmitool would prompt.
func writePasswordFile(password string) (string, error) {
	f, err := os.CreateTemp("", "ferric-ipmi-*")
	if err != nil {
		return "", fmt.Errorf("create IPMI password file: %w", err)
	}
	if password == "" {
		password = "\x00"
	}
	err = f.Chmod(0o600)
	if err == nil {
		_, err = f.WriteString(password)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("write IPMI password file: %w", err)
	}
	return f.Name(), nil
}

func (t *ipmitool) transient(stderr string) bool {
	for _, s := range append(retryable, t.cfg.AdditionalRetryableIPMIErrors...) {
		if s != "" && strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// describe explains a failed run for operators: the likely cause first,
// then what ipmitool said, with the password masked out.
func (t *ipmitool) describe(ctx context.Context, b bmcInfo, err error, stderr string) string {
	said := mask(quote(stderr), b.Password)
	user := fmt.Sprintf("user %q", b.Username)
	if b.Username == "" {
		user = "the null user"
	}
	var cause string
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		cause = fmt.Sprintf("No answer from the BMC at %s in time; ipmitool was stopped (%v)", b.target(), ctx.Err())
	case strings.Contains(stderr, "RAKP 2 HMAC is invalid"), strings.Contains(stderr, "password is invalid"):
		cause = fmt.Sprintf("The BMC at %s rejected the password of %s", b.target(), user)
	case strings.Contains(stderr, "unauthorized name"):
		cause = fmt.Sprintf("The BMC at %s does not know %s", b.target(), user)
	case strings.Contains(stderr, "invalid authentication algorithm"), strings.Contains(stderr, "no matching cipher suite"):
		cause = fmt.Sprintf("The BMC at %s does not offer the requested cipher suite (ipmi_cipher_suite)", b.target())
	case strings.Contains(stderr, "Get Auth Capabilities error"), strings.Contains(stderr, "No response from remote controller"):
		cause = fmt.Sprintf("No answer from the BMC at %s", b.target())
	case strings.Contains(stderr, "requested maximum privilege level"), strings.Contains(stderr, "insufficient privilege"):
		cause = fmt.Sprintf("The BMC at %s refused privilege level %s to %s", b.target(), b.PrivLevel, user)
	default:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			cause = fmt.Sprintf("ipmitool exited with status %d", exit.ExitCode())
		} else {
			cause = mask(err.Error(), b.Password)
		}
	}
	if said == "" {
		return cause + "."
	}
	return fmt.Sprintf("%s. ipmitool: %s", cause, said)
}

// quote keeps the informative lines of ipmitool's stderr, joined, and at
// most 500 bytes of them.
func quote(stderr string) string {
	var keep []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), ">"))
		if line == "" || isNoise(line) {
			continue
		}
		keep = append(keep, line)
	}
	s := strings.Join(keep, "; ")
	if len(s) > 500 {
		s = s[:500] + "..."
	}
	return s
}

func isNoise(line string) bool {
	for _, n := range noise {
		if strings.HasPrefix(line, n) {
			return true
		}
	}
	return false
}

// mask removes the password from text bound for errors and logs, and
// anything else that looks like a credential.
func mask(text, password string) string {
	if password != "" {
		text = strings.ReplaceAll(text, password, secrets.Masked)
	}
	return secrets.MaskString(text)
}
