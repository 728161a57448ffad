package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/accounts"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/containers"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/objects"
	"github.com/gophercloud/gophercloud/v2/openstack/objectstorage/v1/swauth"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/secrets"
)

// tempURLKeyRefresh bounds how long a read Temp-URL-Key is trusted, so an
// operator's key rotation reaches the URLs without a conductor restart.
const tempURLKeyRefresh = time.Minute

// tempURLKeyLength is the length of a key this package sets on an account
// that has none.
const tempURLKeyLength = 32

// Swift publishes into one container of a Swift account.
type Swift struct {
	client    *gophercloud.ServiceClient
	container string

	mu      sync.Mutex
	key     string
	keyRead time.Time
}

// NewSwift authenticates as [swift] says and creates the container when it
// is missing.
func NewSwift(ctx context.Context, sw config.Swift, container string) (*Swift, error) {
	client, err := swiftClient(ctx, sw)
	if err != nil {
		return nil, err
	}
	s := &Swift{client: client, container: container}
	// PUT of an existing container answers 202 and changes nothing.
	if err := containers.Create(ctx, client, container, nil).Err; err != nil {
		return nil, fmt.Errorf("publish: create Swift container %s: %w", container, err)
	}
	return s, nil
}

func swiftClient(ctx context.Context, sw config.Swift) (*gophercloud.ServiceClient, error) {
	switch sw.AuthType {
	case "tempauth":
		// The bound keeps a Swift that stops answering from holding a
		// deploy for ever; at 10 MB/s it still lets a 3 GB ISO through.
		pc := &gophercloud.ProviderClient{HTTPClient: http.Client{Timeout: 5 * time.Minute}}
		pc.UseTokenLock()
		opts := swauth.AuthOpts{User: sw.Username, Key: sw.Password}
		// gophercloud appends the path itself.
		base, ok := strings.CutSuffix(strings.TrimRight(sw.AuthURL, "/"), "/auth/v1.0")
		if !ok {
			return nil, fmt.Errorf("publish: [swift] auth_url %s does not end in /auth/v1.0", sw.AuthURL)
		}
		pc.IdentityBase = gophercloud.NormalizeURL(base)
		sc, err := swauth.NewObjectStorageV1(ctx, pc, opts)
		if err != nil {
			return nil, fmt.Errorf("publish: Swift v1 auth at %s as %s: %w", sw.AuthURL, sw.Username, err)
		}
		// A tempauth token lasts a day by default; a 401 after that
		// authenticates again and retries the request once. The auth
		// request goes through a client of its own: pc's token lock is
		// held while this runs, and a request through pc would wait on it
		// for ever.
		pc.ReauthFunc = func(ctx context.Context) error {
			authClient := &gophercloud.ProviderClient{HTTPClient: pc.HTTPClient, IdentityBase: pc.IdentityBase}
			res, err := swauth.Auth(ctx, authClient, opts).Extract()
			if err != nil {
				return fmt.Errorf("Swift v1 auth as %s: %w", sw.Username, err)
			}
			pc.SetToken(res.Token)
			return nil
		}
		return sc, nil
	case "password":
		pc, err := openstack.AuthenticatedClient(ctx, gophercloud.AuthOptions{
			IdentityEndpoint: sw.AuthURL,
			Username:         sw.Username,
			Password:         sw.Password,
			DomainName:       sw.UserDomainName,
			Scope:            &gophercloud.AuthScope{ProjectName: sw.ProjectName, DomainName: sw.ProjectDomainName},
			AllowReauth:      true,
		})
		if err != nil {
			return nil, fmt.Errorf("publish: Keystone auth at %s as %s: %w", sw.AuthURL, sw.Username, err)
		}
		sc, err := openstack.NewObjectStorageV1(pc, gophercloud.EndpointOpts{Region: sw.RegionName})
		if err != nil {
			return nil, fmt.Errorf("publish: object-store endpoint: %w", err)
		}
		return sc, nil
	default:
		return nil, fmt.Errorf("publish: [swift] auth_type %q: Swift is not configured", sw.AuthType)
	}
}

// Publish uploads r as an object; a lifetime becomes X-Delete-After, after
// which Swift answers 404 and its object expirer removes the data.
func (s *Swift) Publish(ctx context.Context, name string, r io.Reader, lifetime time.Duration) error {
	if err := checkName(name); err != nil {
		return err
	}
	opts := objects.CreateOpts{Content: r, ContentType: "application/octet-stream"}
	if lifetime > 0 {
		opts.DeleteAfter = int64(math.Ceil(lifetime.Seconds()))
	}
	if err := objects.Create(ctx, s.client, s.container, name, opts).Err; err != nil {
		return fmt.Errorf("publish: upload %s/%s to Swift: %w", s.container, name, err)
	}
	return nil
}

// URL signs a GET temporary URL locally; Swift's tempurl middleware lets a
// GET signature serve HEAD as well, which the iLO sends before inserting the
// medium.
func (s *Swift) URL(ctx context.Context, name string, ttl time.Duration) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	if err := checkTTL(ttl); err != nil {
		return "", err
	}
	key, err := s.tempURLKey(ctx)
	if err != nil {
		return "", err
	}
	u, err := objects.CreateTempURL(ctx, s.client, s.container, name, objects.CreateTempURLOpts{
		Method: objects.GET, TTL: int(math.Ceil(ttl.Seconds())), TempURLKey: key, Digest: "sha256",
	})
	if err != nil {
		return "", fmt.Errorf("publish: temporary URL of %s/%s: %w", s.container, name, err)
	}
	return u, nil
}

// tempURLKey is the account's X-Account-Meta-Temp-URL-Key. An account
// without one gets a random key: without it no temporary URL works, and a
// key made here never has to appear in a configuration file. An existing
// key is never replaced, since other services may sign with it.
func (s *Swift) tempURLKey(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.key != "" && time.Since(s.keyRead) < tempURLKeyRefresh {
		return s.key, nil
	}
	key, err := s.readTempURLKey(ctx)
	if err != nil {
		return "", err
	}
	if key == "" {
		fresh, err := secrets.Generate(tempURLKeyLength)
		if err != nil {
			return "", err
		}
		if err := accounts.Update(ctx, s.client, accounts.UpdateOpts{TempURLKey: fresh}).Err; err != nil {
			return "", fmt.Errorf("publish: set the Swift account's Temp-URL-Key: %w", err)
		}
		// Another conductor may have set its own key at the same time:
		// sign with whichever the account kept.
		if key, err = s.readTempURLKey(ctx); err != nil {
			return "", err
		}
		if key == "" {
			return "", errors.New("publish: the Swift account keeps no Temp-URL-Key (is the tempurl middleware in the proxy pipeline?)")
		}
	}
	s.key, s.keyRead = key, time.Now()
	return key, nil
}

func (s *Swift) readTempURLKey(ctx context.Context) (string, error) {
	h, err := accounts.Get(ctx, s.client, nil).Extract()
	if err != nil {
		return "", fmt.Errorf("publish: read the Swift account's Temp-URL-Key: %w", err)
	}
	return h.TempURLKey, nil
}

// Delete removes the object; 404 (never uploaded, expired, deleted by
// someone else) is the wanted end state.
func (s *Swift) Delete(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	err := objects.Delete(ctx, s.client, s.container, name, nil).Err
	if err != nil && !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return fmt.Errorf("publish: delete %s/%s from Swift: %w", s.container, name, err)
	}
	return nil
}
