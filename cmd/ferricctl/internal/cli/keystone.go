package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
)

// keystonePassword is the password authentication the OpenStack
// variables describe: OS_AUTH_URL, OS_USERNAME, OS_PASSWORD,
// OS_USER_DOMAIN_NAME, and a project (OS_PROJECT_NAME,
// OS_PROJECT_DOMAIN_NAME) or the system (OS_SYSTEM_SCOPE=all) as scope.
func (s *session) keystonePassword() (gophercloud.AuthOptions, error) {
	ao := gophercloud.AuthOptions{IdentityEndpoint: s.authURL, Username: s.username, Password: s.password,
		DomainName: orDefault(s.getenv("OS_USER_DOMAIN_NAME"))}
	if ao.IdentityEndpoint == "" || ao.Username == "" || ao.Password == "" {
		return ao, errors.New("password authentication needs --os-auth-url, --os-username and --os-password (or OS_AUTH_URL, OS_USERNAME and OS_PASSWORD)")
	}
	switch {
	case strings.EqualFold(s.getenv("OS_SYSTEM_SCOPE"), "all"):
		ao.Scope = &gophercloud.AuthScope{System: true}
	case s.getenv("OS_PROJECT_NAME") != "":
		ao.Scope = &gophercloud.AuthScope{ProjectName: s.getenv("OS_PROJECT_NAME"), DomainName: orDefault(s.getenv("OS_PROJECT_DOMAIN_NAME"))}
	}
	return ao, nil
}

func orDefault(domain string) string {
	if domain == "" {
		return "Default"
	}
	return domain
}

// cloudAuth reads the named cloud of clouds.yaml, where the openstack
// client looks for it (OS_CLIENT_CONFIG_FILE first).
func (s *session) cloudAuth() (gophercloud.AuthOptions, gophercloud.EndpointOpts, *tls.Config, error) {
	opts := []clouds.ParseOption{clouds.WithCloudName(s.cloud)}
	if file := s.getenv("OS_CLIENT_CONFIG_FILE"); file != "" {
		opts = append(opts, clouds.WithLocations(file))
	}
	ao, eo, tlsConfig, err := clouds.Parse(opts...)
	if err != nil {
		return ao, eo, nil, fmt.Errorf("cloud %q: %w", s.cloud, err)
	}
	return ao, eo, tlsConfig, nil
}

// keystoneClient authenticates with Keystone and returns a client of the
// bare metal endpoint given, or else of the one in the token's catalog.
func (s *session) keystoneClient(ctx context.Context, ao gophercloud.AuthOptions, eo gophercloud.EndpointOpts, tlsConfig *tls.Config) (*gophercloud.ServiceClient, error) {
	provider, err := openstack.NewClient(ao.IdentityEndpoint)
	if err != nil {
		return nil, fmt.Errorf("connect to Keystone at %s: %w", ao.IdentityEndpoint, err)
	}
	if tlsConfig != nil {
		provider.HTTPClient = http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	}
	// A long wait (a deploy followed with --wait) may outlive the token.
	ao.AllowReauth = true
	if err := openstack.Authenticate(ctx, provider, ao); err != nil {
		// Keystone's answer, not the API's: describe it here, where the
		// context is known.
		return nil, fmt.Errorf("authenticate with Keystone at %s: %s", ao.IdentityEndpoint, describe(err))
	}
	if s.endpoint == "" {
		return openstack.NewBareMetalV1(provider, eo)
	}
	return &gophercloud.ServiceClient{ProviderClient: provider, Endpoint: gophercloud.NormalizeURL(baremetalEndpoint(s.endpoint)), Type: "baremetal"}, nil
}

// baremetalEndpoint is the API root as given, with /v1 once.
func baremetalEndpoint(endpoint string) string {
	endpoint = strings.TrimRight(endpoint, "/")
	if !strings.HasSuffix(endpoint, "/v1") {
		endpoint += "/v1"
	}
	return endpoint
}
