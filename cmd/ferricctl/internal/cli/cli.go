// Package cli is ferricctl's command tree: the OpenStack "baremetal"
// commands for nodes and volume connectors/targets, over gophercloud and
// Ferric's volume client.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/httpbasic"
	"github.com/gophercloud/gophercloud/v2/openstack/baremetal/noauth"
	"github.com/spf13/cobra"

	"github.com/ferricbm/ferric/cmd/ferricctl/internal/output"
)

// fallbackVersion is used when the server does not tell its versions.
const fallbackVersion = "1.33"

// Execute runs ferricctl with args and returns the process exit code.
// getenv supplies the OS_* environment.
func Execute(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	root := newRoot(stdout, stderr, getenv)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "Error:", describe(err))
		return 1
	}
	return 0
}

// session holds the global options and the lazily built API client.
type session struct {
	endpoint   string
	authType   string
	authURL    string
	cloud      string
	username   string
	password   string
	apiVersion string
	out        output.Options

	stdout, stderr io.Writer
	getenv         func(string) string
	client         *gophercloud.ServiceClient
}

// fromEnv fills the connection settings the user did not give as flags
// from the environment. It runs after flag parsing, so that environment
// values (the password above all) never show up as defaults in --help.
func (s *session) fromEnv() {
	for _, v := range []struct {
		value *string
		env   string
	}{
		{&s.endpoint, "OS_ENDPOINT"}, {&s.authType, "OS_AUTH_TYPE"}, {&s.authURL, "OS_AUTH_URL"}, {&s.cloud, "OS_CLOUD"}, {&s.username, "OS_USERNAME"},
		{&s.password, "OS_PASSWORD"}, {&s.apiVersion, "OS_BAREMETAL_API_VERSION"},
	} {
		if *v.value == "" {
			*v.value = s.getenv(v.env)
		}
	}
	if s.authType == "" {
		s.authType = "none"
	}
}

func newRoot(stdout, stderr io.Writer, getenv func(string) string) *cobra.Command {
	s := &session{stdout: stdout, stderr: stderr, getenv: getenv}
	format := "table"
	root := &cobra.Command{
		Use:   "ferricctl",
		Short: "Command-line client for the Ferric (Ironic-compatible) Bare Metal API",
		Long: `Command-line client for the Ferric (Ironic-compatible) Bare Metal API.

Connection settings come from flags or the usual OpenStack variables:
OS_ENDPOINT (e.g. http://127.0.0.1:6385), OS_AUTH_TYPE (none, http_basic or
password), OS_USERNAME and OS_PASSWORD (http_basic and password), for Keystone
password authentication OS_AUTH_URL, OS_USER_DOMAIN_NAME and a scope
(OS_PROJECT_NAME with OS_PROJECT_DOMAIN_NAME, or OS_SYSTEM_SCOPE=all), or
OS_CLOUD naming a cloud of clouds.yaml (OS_CLIENT_CONFIG_FILE, ./clouds.yaml,
~/.config/openstack or /etc/openstack); with Keystone, the endpoint comes from
the token's catalog unless OS_ENDPOINT is set. OS_BAREMETAL_API_VERSION is a
version such as 1.32, or "latest"; by default the newest the server offers.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			s.fromEnv()
			s.out.Format = format
			return s.out.Validate()
		},
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	f := root.PersistentFlags()
	f.StringVar(&s.endpoint, "os-endpoint", "", "Bare Metal API endpoint, e.g. http://127.0.0.1:6385 [$OS_ENDPOINT]")
	f.StringVar(&s.authType, "os-auth-type", "", "authentication: none (default), http_basic, or password (Keystone) [$OS_AUTH_TYPE]")
	f.StringVar(&s.authURL, "os-auth-url", "", "Keystone URL for password authentication [$OS_AUTH_URL]")
	f.StringVar(&s.cloud, "os-cloud", "", "cloud in clouds.yaml to authenticate with, as the openstack client reads it [$OS_CLOUD]")
	f.StringVar(&s.username, "os-username", "", "user for http_basic [$OS_USERNAME]")
	f.StringVar(&s.password, "os-password", "", "password for http_basic [$OS_PASSWORD]")
	f.StringVar(&s.apiVersion, "os-baremetal-api-version", "",
		"API microversion X.Y or latest; default: the server's newest (1.33 if it does not say) [$OS_BAREMETAL_API_VERSION]")
	f.StringVarP(&format, "format", "f", "table", "output format: "+strings.Join(output.Formats, ", "))
	f.StringArrayVarP(&s.out.Columns, "column", "c", nil, "show only this column (repeatable)")

	volume := group("volume", "Volume connectors and targets (API 1.32+)")
	volume.AddCommand(connectorCommands(s), targetCommands(s))
	root.AddCommand(volume, nodeCommands(s), portCommands(s), allocationCommands(s))
	return root
}

// group is a command that only holds subcommands: alone it prints its
// help, with an unknown subcommand it fails (cobra would print the help
// and succeed).
func group(use, short string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
}

// baremetal returns the API client, negotiating the microversion on first
// use. minVersion is what the command needs ("" for nothing special).
func (s *session) baremetal(ctx context.Context, minVersion string) (*gophercloud.ServiceClient, error) {
	if s.client == nil {
		c, err := s.connect(ctx)
		if err != nil {
			return nil, err
		}
		version := s.apiVersion
		if version == "" || strings.EqualFold(version, "latest") {
			version = negotiate(ctx, c)
		} else if _, err := parseVersion(version); err != nil {
			return nil, fmt.Errorf("--os-baremetal-api-version: %w", err)
		}
		c.Microversion = version
		s.client = c
	}
	if minVersion != "" && versionLess(s.client.Microversion, minVersion) {
		return nil, fmt.Errorf("this command needs Bare Metal API version %s or later; using %s", minVersion, s.client.Microversion)
	}
	return s.client, nil
}

func (s *session) connect(ctx context.Context) (*gophercloud.ServiceClient, error) {
	switch {
	case s.cloud != "":
		ao, eo, tlsConfig, err := s.cloudAuth()
		if err != nil {
			return nil, err
		}
		return s.keystoneClient(ctx, ao, eo, tlsConfig)
	case s.authType == "password" || s.authType == "v3password":
		ao, err := s.keystonePassword()
		if err != nil {
			return nil, err
		}
		return s.keystoneClient(ctx, ao, gophercloud.EndpointOpts{}, nil)
	case s.endpoint == "":
		return nil, errors.New("no endpoint: set --os-endpoint or OS_ENDPOINT")
	}
	endpoint := baremetalEndpoint(s.endpoint)
	switch s.authType {
	case "none", "noauth":
		return noauth.NewBareMetalNoAuth(noauth.EndpointOpts{IronicEndpoint: endpoint})
	case "http_basic":
		if s.username == "" || s.password == "" {
			return nil, errors.New("http_basic needs --os-username and --os-password (or OS_USERNAME and OS_PASSWORD)")
		}
		return httpbasic.NewBareMetalHTTPBasic(httpbasic.EndpointOpts{IronicEndpoint: endpoint, IronicUser: s.username, IronicUserPassword: s.password})
	default:
		return nil, fmt.Errorf("unsupported --os-auth-type %q (want none, http_basic or password)", s.authType)
	}
}

// negotiate asks the server for its newest microversion: GET /v1 answers
// it in a header and in its "version" document.
func negotiate(ctx context.Context, c *gophercloud.ServiceClient) string {
	var body struct {
		Version struct {
			Version string `json:"version"`
		} `json:"version"`
	}
	//nolint:bodyclose // gophercloud reads and closes the body (no KeepResponseBody)
	resp, err := c.Get(ctx, c.Endpoint, &body, &gophercloud.RequestOpts{OkCodes: []int{http.StatusOK}})
	if err != nil {
		return fallbackVersion
	}
	for _, v := range []string{resp.Header.Get("X-OpenStack-Ironic-API-Maximum-Version"), body.Version.Version} {
		if _, err := parseVersion(v); err == nil {
			return v
		}
	}
	return fallbackVersion
}

func parseVersion(v string) ([2]int, error) {
	major, minor, ok := strings.Cut(strings.TrimSpace(v), ".")
	a, errA := strconv.Atoi(major)
	b, errB := strconv.Atoi(minor)
	if !ok || errA != nil || errB != nil || a < 0 || b < 0 {
		return [2]int{}, fmt.Errorf("invalid API version %q (want X.Y or latest)", v)
	}
	return [2]int{a, b}, nil
}

func versionLess(a, b string) bool {
	va, _ := parseVersion(a)
	vb, _ := parseVersion(b)
	return va[0] < vb[0] || (va[0] == vb[0] && va[1] < vb[1])
}

// describe turns an API error into the server's own message and status;
// Ironic wraps it as {"error_message": "<json with faultstring>"}.
func describe(err error) string {
	var unexpected gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &unexpected) {
		return err.Error()
	}
	msg := faultString(unexpected.Body)
	if msg == "" {
		msg = http.StatusText(unexpected.Actual)
	}
	return fmt.Sprintf("%s (HTTP %d)", msg, unexpected.Actual)
}

func faultString(body []byte) string {
	var outer struct {
		ErrorMessage json.RawMessage `json:"error_message"`
	}
	if json.Unmarshal(body, &outer) != nil || len(outer.ErrorMessage) == 0 {
		return ""
	}
	inner := outer.ErrorMessage
	var s string
	if json.Unmarshal(inner, &s) == nil {
		inner = json.RawMessage(s)
	}
	var fault struct {
		FaultString string `json:"faultstring"`
		Description string `json:"description"`
	}
	if json.Unmarshal(inner, &fault) != nil {
		return s
	}
	if fault.FaultString != "" {
		return fault.FaultString
	}
	return fault.Description
}
