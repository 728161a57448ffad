// Package redfish is a client for the parts of the DMTF Redfish API a
// virtual-media driver needs (docs/ilo.md §Redfish): a system's power and
// boot override, its manager's virtual media, and the task monitors that
// long actions answer with.
package redfish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ferricbm/ferric/conductor/bmc/transport"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// Errors a caller tells apart with errors.Is.
var (
	// ErrUnauthorized is a 401: the credentials were refused.
	ErrUnauthorized = errors.New("Redfish credentials refused")
	// ErrNoMedia means the manager has no virtual media device of the
	// asked type.
	ErrNoMedia = errors.New("no virtual media device of that type")
)

// HTTPError is an error status from the service, with the message of its
// Redfish error body when there is one.
type HTTPError struct {
	Op      string
	Status  int
	Message string
}

func (e *HTTPError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("Redfish %s failed: HTTP %d", e.Op, e.Status)
	}
	return fmt.Sprintf("Redfish %s failed: HTTP %d: %s", e.Op, e.Status, e.Message)
}

// Is makes errors.Is(err, ErrUnauthorized) match a 401.
func (e *HTTPError) Is(target error) bool {
	return target == ErrUnauthorized && e.Status == http.StatusUnauthorized
}

// TaskError is a task that ended in another state than Completed.
type TaskError struct {
	Op       string
	State    string
	Messages []string
}

func (e *TaskError) Error() string {
	msg := fmt.Sprintf("Redfish %s: task ended in state %s", e.Op, e.State)
	if len(e.Messages) > 0 {
		msg += ": " + strings.Join(e.Messages, "; ")
	}
	return msg
}

// Config is how to reach one Redfish service.
type Config struct {
	// Address is host, host:port, or an https:// URL.
	Address  string
	Username string
	Password string
	// Session logs in once and sends a session token instead of the
	// password with every request.
	Session bool
	// TLS verification is on unless TLS.Insecure.
	TLS transport.TLS
	// Timeout bounds each request; 0 is transport.DefaultTimeout.
	Timeout time.Duration
	// TaskPoll is the wait between reads of a task monitor; 0 is 1s.
	TaskPoll time.Duration
	// SystemID and ManagerID pick a member of the collections; "" takes
	// the first, which is the only one on a rack server.
	SystemID  string
	ManagerID string
}

// Client talks to one Redfish service. It is safe for concurrent use.
type Client struct {
	base string
	cfg  Config
	http *http.Client

	mu      sync.Mutex
	token   string
	session string
	system  string
	manager string
}

// New checks cfg and builds a client; it does not contact the service.
func New(cfg Config) (*Client, error) {
	if cfg.Address == "" {
		return nil, errors.New("Redfish address is empty")
	}
	if cfg.Username == "" {
		return nil, errors.New("Redfish username is empty")
	}
	base := strings.TrimRight(cfg.Address, "/")
	if strings.HasPrefix(base, "http://") {
		return nil, errors.New("Redfish address must use https")
	}
	if !strings.HasPrefix(base, "https://") {
		base = "https://" + base
	}
	if cfg.TaskPoll <= 0 {
		cfg.TaskPoll = time.Second
	}
	hc, err := transport.NewHTTPClient(cfg.TLS)
	if err != nil {
		return nil, err
	}
	return &Client{base: base, cfg: cfg, http: hc}, nil
}

// Close ends the session, if one was opened.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	token, session := c.token, c.session
	c.token, c.session = "", ""
	c.mu.Unlock()
	if session == "" || token == "" {
		return nil
	}
	u, err := c.url(session)
	if err != nil {
		return err
	}
	req, err := transport.NewRequest(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("X-Auth-Token", token)
	resp, err := transport.Do(ctx, c.http, req, c.cfg.Timeout, "Redfish log out")
	_, err = c.check("log out", resp, err)
	return err
}

// do sends a request and fails on an error status. A refused session
// token (it expired, or the BMC restarted) is replaced once.
func (c *Client) do(ctx context.Context, op, method, path string, body any) (*transport.Response, error) {
	resp, err := c.send(ctx, op, method, path, body, true)
	if err != nil || resp.Status != http.StatusUnauthorized || !c.cfg.Session {
		return c.check(op, resp, err)
	}
	c.mu.Lock()
	c.token = ""
	c.mu.Unlock()
	resp, err = c.send(ctx, op, method, path, body, true)
	return c.check(op, resp, err)
}

func (c *Client) check(op string, resp *transport.Response, err error) (*transport.Response, error) {
	if err != nil {
		return nil, err
	}
	if resp.Status >= 400 {
		return nil, &HTTPError{Op: op, Status: resp.Status, Message: c.scrub(errorMessage(resp.Body))}
	}
	return resp, nil
}

func (c *Client) send(ctx context.Context, op, method, path string, body any, auth bool) (*transport.Response, error) {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return nil, fmt.Errorf("Redfish %s: encode request: %w", op, err)
		}
	}
	u, err := c.url(path)
	if err != nil {
		return nil, err
	}
	req, err := transport.NewRequest(ctx, method, u, data)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OData-Version", "4.0")
	if data != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth {
		if err := c.authorize(ctx, req); err != nil {
			return nil, err
		}
	}
	return transport.Do(ctx, c.http, req, c.cfg.Timeout, "Redfish "+op)
}

func (c *Client) authorize(ctx context.Context, req *http.Request) error {
	if !c.cfg.Session {
		req.SetBasicAuth(c.cfg.Username, c.cfg.Password)
		return nil
	}
	c.mu.Lock()
	token := c.token
	c.mu.Unlock()
	if token == "" {
		var err error
		if token, err = c.login(ctx); err != nil {
			return err
		}
	}
	req.Header.Set("X-Auth-Token", token)
	return nil
}

func (c *Client) login(ctx context.Context) (string, error) {
	creds := map[string]string{"UserName": c.cfg.Username, "Password": c.cfg.Password}
	resp, err := c.send(ctx, "log in", http.MethodPost, "/redfish/v1/SessionService/Sessions", creds, false)
	if resp, err = c.check("log in", resp, err); err != nil {
		return "", err
	}
	token := resp.Header.Get("X-Auth-Token")
	if token == "" {
		return "", errors.New("Redfish log in: the service answered without X-Auth-Token")
	}
	c.mu.Lock()
	c.token, c.session = token, resp.Header.Get("Location")
	c.mu.Unlock()
	return token, nil
}

// url makes an absolute URL of a path the service gave. An absolute
// answer (a task monitor's Location may be one) must point at the BMC
// itself: credentials go with every request.
func (c *Client) url(path string) (string, error) {
	switch {
	case strings.HasPrefix(path, "/"):
		return c.base + path, nil
	case strings.HasPrefix(path, c.base+"/"):
		return path, nil
	}
	return "", fmt.Errorf("Redfish: %q is not on the BMC at %s", path, c.base)
}

// get reads path into v.
func (c *Client) get(ctx context.Context, op, path string, v any) error {
	resp, err := c.do(ctx, op, http.MethodGet, path, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("Redfish %s: unreadable answer: %w", op, err)
	}
	return nil
}

type link struct {
	ID string `json:"@odata.id"`
}

type collection struct {
	Members []link `json:"Members"`
}

// member is the path of the member of collection named id, or the first.
func (c *Client) member(ctx context.Context, op, collectionPath, id string) (string, error) {
	if id != "" {
		return collectionPath + "/" + id, nil
	}
	var col collection
	if err := c.get(ctx, op, collectionPath, &col); err != nil {
		return "", err
	}
	if len(col.Members) == 0 || col.Members[0].ID == "" {
		return "", fmt.Errorf("Redfish %s: %s has no members", op, collectionPath)
	}
	return col.Members[0].ID, nil
}

func (c *Client) systemPath(ctx context.Context) (string, error) {
	c.mu.Lock()
	p := c.system
	c.mu.Unlock()
	if p != "" {
		return p, nil
	}
	p, err := c.member(ctx, "find the system", "/redfish/v1/Systems", c.cfg.SystemID)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.system = p
	c.mu.Unlock()
	return p, nil
}

func (c *Client) managerPath(ctx context.Context) (string, error) {
	c.mu.Lock()
	p := c.manager
	c.mu.Unlock()
	if p != "" {
		return p, nil
	}
	p, err := c.member(ctx, "find the manager", "/redfish/v1/Managers", c.cfg.ManagerID)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.manager = p
	c.mu.Unlock()
	return p, nil
}

// scrub hides the password in a message from the service, which may
// quote a property value it refused, the login's Password included.
func (c *Client) scrub(msg string) string {
	if c.cfg.Password != "" {
		msg = strings.ReplaceAll(msg, c.cfg.Password, secrets.Masked)
	}
	return secrets.MaskString(msg)
}

// errorMessage is the most specific message of a Redfish error body.
func errorMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Info    []struct {
				Message string `json:"Message"`
			} `json:"@Message.ExtendedInfo"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	var msgs []string
	for _, i := range e.Error.Info {
		if i.Message != "" {
			msgs = append(msgs, i.Message)
		}
	}
	if len(msgs) > 0 {
		return strings.Join(msgs, "; ")
	}
	return e.Error.Message
}
