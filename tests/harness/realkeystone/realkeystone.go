// Package realkeystone runs Debian's Keystone (the keystone package) for a
// test suite: its own MariaDB database, Fernet tokens, its WSGI app under
// uwsgi on a free loopback port, bootstrapped with an admin, and calls to
// create the projects, users, roles and role assignments a suite needs.
package realkeystone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/ferricbm/ferric/tests/harness"
)

// ErrMissing is returned by Available when the keystone package or
// uwsgi's Python 3 plugin is not installed (scripts/setup.sh installs
// both).
var ErrMissing = errors.New("Keystone is not installed (apt-get install keystone uwsgi-plugin-python3; scripts/setup.sh does)")

const (
	wsgiApp      = "/usr/bin/keystone-wsgi-public"
	uwsgiPlugin  = "/usr/lib/uwsgi/plugins/python3_plugin.so"
	adminName    = "admin"
	startTimeout = 60 * time.Second
)

// Available reports whether a Keystone can be started here.
func Available() error {
	for _, path := range []string{wsgiApp, uwsgiPlugin} {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrMissing, path, err)
		}
	}
	if _, err := exec.LookPath("keystone-manage"); err != nil {
		return fmt.Errorf("%w: %w", ErrMissing, err)
	}
	return nil
}

// Keystone is a running Keystone.
type Keystone struct {
	// URL is the identity endpoint without /v3.
	URL           string
	AdminPassword string
	db            *harness.Database
	proc          *harness.Process
	dir           string
	admin         string
}

// Start configures and starts a Keystone in dir (which must exist).
func Start(ctx context.Context, dir string) (*Keystone, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	db, err := harness.CreateDatabase(ctx, "keystone")
	if err != nil {
		return nil, err
	}
	k := &Keystone{db: db, dir: dir, AdminPassword: "admin-" + strconv.FormatInt(time.Now().UnixNano(), 36)}
	if err := k.start(ctx); err != nil {
		k.Close()
		return nil, err
	}
	return k, nil
}

func (k *Keystone) start(ctx context.Context) error {
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	k.URL = "http://127.0.0.1:" + strconv.Itoa(port)
	conf := filepath.Join(k.dir, "keystone.conf")
	keys := func(name string) string { return filepath.Join(k.dir, name) }
	// Keystone reads the database URL with SQLAlchemy's driver prefix.
	text := fmt.Sprintf(`[DEFAULT]
use_stderr = true
[database]
connection = mysql+pymysql://root@127.0.0.1:3306/%s
[token]
provider = fernet
[fernet_tokens]
key_repository = %s
[fernet_receipts]
key_repository = %s
[credential]
key_repository = %s
`, k.db.Name, keys("fernet-keys"), keys("receipt-keys"), keys("credential-keys"))
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return fmt.Errorf("keystone config: %w", err)
	}
	owner := []string{"--keystone-user", strconv.Itoa(os.Getuid()), "--keystone-group", strconv.Itoa(os.Getgid())}
	for _, args := range [][]string{
		{"db_sync"},
		append([]string{"fernet_setup"}, owner...),
		append([]string{"credential_setup"}, owner...),
		{"bootstrap", "--bootstrap-password", k.AdminPassword, "--bootstrap-public-url", k.URL + "/v3", "--bootstrap-region-id", "RegionOne"},
	} {
		cmd := exec.CommandContext(ctx, "keystone-manage", append([]string{"--config-file", conf}, args...)...)
		cmd.Dir = k.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("keystone-manage %s: %w: %s", args[0], err, tail(out))
		}
	}
	k.proc, err = harness.Start("keystone", "uwsgi", []string{"--plugin", "python3", "--http-socket", "127.0.0.1:" + strconv.Itoa(port),
		"--wsgi-file", wsgiApp, "--env", "OS_KEYSTONE_CONFIG_FILES=" + conf, "--master", "--processes", "1", "--threads", "8",
		"--lazy-apps", "--die-on-term", "--chdir", k.dir}, filepath.Join(k.dir, "keystone.log"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(startTimeout)
	for {
		if tok, err := k.password(ctx, adminName, k.AdminPassword, map[string]any{"project": map[string]any{"name": adminName, "domain": map[string]string{"id": "default"}}}); err == nil {
			k.admin = tok
			return nil
		} else if time.Now().After(deadline) || k.proc.Exited() {
			return fmt.Errorf("keystone did not answer at %s: %w\n%s", k.URL, err, k.proc.LogTail(20))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func tail(out []byte) []byte {
	if len(out) > 2000 {
		return out[len(out)-2000:]
	}
	return out
}

// Close stops Keystone and drops its database.
func (k *Keystone) Close() {
	if k.proc != nil {
		_ = k.proc.Stop(10 * time.Second)
	}
	_ = k.db.Drop(context.Background())
}

// CreateProject creates a project in the default domain; its id.
func (k *Keystone) CreateProject(ctx context.Context, name string) (string, error) {
	var out struct{ Project struct{ ID string } }
	err := k.call(ctx, http.MethodPost, "/v3/projects", map[string]any{"project": map[string]any{"name": name, "domain_id": "default"}}, &out)
	return out.Project.ID, err
}

// CreateRole creates a role; its id.
func (k *Keystone) CreateRole(ctx context.Context, name string) (string, error) {
	var out struct{ Role struct{ ID string } }
	err := k.call(ctx, http.MethodPost, "/v3/roles", map[string]any{"role": map[string]any{"name": name}}, &out)
	return out.Role.ID, err
}

// RoleID is the id of an existing role (bootstrap made admin, member and
// reader, admin implying member implying reader).
func (k *Keystone) RoleID(ctx context.Context, name string) (string, error) {
	var out struct{ Roles []struct{ ID string } }
	if err := k.call(ctx, http.MethodGet, "/v3/roles?name="+name, nil, &out); err != nil {
		return "", err
	}
	if len(out.Roles) != 1 {
		return "", fmt.Errorf("role %s: %d found", name, len(out.Roles))
	}
	return out.Roles[0].ID, nil
}

// CreateUser creates a user in the default domain; its id.
func (k *Keystone) CreateUser(ctx context.Context, name, password string) (string, error) {
	var out struct{ User struct{ ID string } }
	err := k.call(ctx, http.MethodPost, "/v3/users", map[string]any{"user": map[string]any{"name": name, "password": password, "domain_id": "default"}}, &out)
	return out.User.ID, err
}

// GrantProject gives the user the role on the project.
func (k *Keystone) GrantProject(ctx context.Context, projectID, userID, roleID string) error {
	return k.call(ctx, http.MethodPut, "/v3/projects/"+projectID+"/users/"+userID+"/roles/"+roleID, nil, nil)
}

// GrantSystem gives the user the role on the system.
func (k *Keystone) GrantSystem(ctx context.Context, userID, roleID string) error {
	return k.call(ctx, http.MethodPut, "/v3/system/users/"+userID+"/roles/"+roleID, nil, nil)
}

// ProjectToken issues a token scoped to the named project.
func (k *Keystone) ProjectToken(ctx context.Context, user, password, project string) (string, error) {
	return k.password(ctx, user, password, map[string]any{"project": map[string]any{"name": project, "domain": map[string]string{"id": "default"}}})
}

// SystemToken issues a system-scoped token.
func (k *Keystone) SystemToken(ctx context.Context, user, password string) (string, error) {
	return k.password(ctx, user, password, map[string]any{"system": map[string]bool{"all": true}})
}

func (k *Keystone) password(ctx context.Context, user, password string, scope map[string]any) (string, error) {
	body := map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"password"}, "password": map[string]any{
			"user": map[string]any{"name": user, "password": password, "domain": map[string]string{"id": "default"}}}},
		"scope": scope}}
	resp, err := k.do(ctx, http.MethodPost, "/v3/auth/tokens", body, "")
	if err != nil {
		return "", err
	}
	return resp.Header.Get("X-Subject-Token"), nil
}

func (k *Keystone) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := k.do(ctx, method, path, body, k.admin)
	if err != nil || out == nil {
		return err
	}
	if err := json.Unmarshal(resp.body, out); err != nil {
		return fmt.Errorf("keystone %s %s: %w", method, path, err)
	}
	return nil
}

type response struct {
	Header http.Header
	body   []byte
}

func (k *Keystone) do(ctx context.Context, method, path string, body any, token string) (*response, error) {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, k.URL+path, rd)
	if err != nil {
		return nil, err
	}
	// uwsgi's HTTP socket closes every connection after its answer: a
	// reused one would fail a POST with EOF.
	req.Close = true
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("keystone %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("keystone %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("keystone %s %s: %s: %s", method, path, resp.Status, tail(raw))
	}
	return &response{Header: resp.Header, body: raw}, nil
}
