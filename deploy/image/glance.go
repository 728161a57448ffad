package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/imagedata"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
)

// Glance authentication types ([glance] auth_type).
const (
	GlanceAuthNone     = "none"
	GlanceAuthPassword = "password"
)

// GlanceOptions configure the Image service client.
type GlanceOptions struct {
	// AuthType is GlanceAuthNone (Endpoint required) or GlanceAuthPassword
	// (Keystone v3 password authentication, project scoped).
	AuthType string
	// Endpoint overrides the catalog's image endpoint; required without
	// authentication.
	Endpoint string
	// AuthURL, Username, Password, ProjectName, UserDomainName,
	// ProjectDomainName and Region are Keystone's.
	AuthURL           string
	Username          string
	Password          string
	ProjectName       string
	UserDomainName    string
	ProjectDomainName string
	Region            string
	// HTTPClient carries the requests; nil means http.DefaultClient's
	// settings.
	HTTPClient *http.Client
}

// Glance resolves Glance image references (a bare image UUID or
// glance://<uuid>) through the Image API v2. It authenticates on first
// use, so a conductor starts while Keystone is away.
type Glance struct {
	opts GlanceOptions

	mu     sync.Mutex
	client *gophercloud.ServiceClient
}

// NewGlance checks opts; nothing is contacted yet.
func NewGlance(opts GlanceOptions) (*Glance, error) {
	switch opts.AuthType {
	case GlanceAuthNone:
		if opts.Endpoint == "" {
			return nil, errors.New("glance: an endpoint is required without authentication")
		}
	case GlanceAuthPassword:
		// Keystone v3 knows users and projects by name only within a
		// domain; gophercloud would refuse the request at first use.
		if opts.AuthURL == "" || opts.Username == "" || opts.Password == "" || opts.ProjectName == "" ||
			opts.UserDomainName == "" || opts.ProjectDomainName == "" {
			return nil, errors.New("glance: password authentication needs auth_url, username, password, project_name, user_domain_name and project_domain_name")
		}
	default:
		return nil, fmt.Errorf("glance: unknown auth type %q (none or password)", opts.AuthType)
	}
	return &Glance{opts: opts}, nil
}

// glanceID matches an image id: Glance ids are UUIDs.
var glanceID = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

// GlanceRef returns the image id of a Glance reference, a UUID with or
// without the glance:// prefix; ok is false for anything else (URLs).
func GlanceRef(source string) (id string, ok bool) {
	id = strings.TrimPrefix(source, "glance://")
	return id, glanceID.MatchString(id)
}

// GlanceImage is what a deploy needs to know of a Glance image.
type GlanceImage struct {
	ID         string
	Status     string
	DiskFormat string
	Size       int64
	// Checksum is Glance's md5; HashAlgo and HashValue its os_hash_algo
	// and os_hash_value (multihash), preferred when present.
	Checksum, HashAlgo, HashValue string
	// KernelID and RamdiskID, image properties, mark a partition image.
	KernelID, RamdiskID string
}

// WholeDisk applies Ironic's rule: an image without kernel_id and
// ramdisk_id is a whole-disk image.
func (i GlanceImage) WholeDisk() bool { return i.KernelID == "" && i.RamdiskID == "" }

func (g *Glance) serviceClient(ctx context.Context) (*gophercloud.ServiceClient, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client != nil {
		return g.client, nil
	}
	var sc *gophercloud.ServiceClient
	switch g.opts.AuthType {
	case GlanceAuthNone:
		pc := &gophercloud.ProviderClient{}
		if g.opts.HTTPClient != nil {
			pc.HTTPClient = *g.opts.HTTPClient
		}
		sc = &gophercloud.ServiceClient{ProviderClient: pc, Type: "image"}
	case GlanceAuthPassword:
		pc, err := openstack.NewClient(g.opts.AuthURL)
		if err != nil {
			return nil, fmt.Errorf("glance: keystone %s: %w", g.opts.AuthURL, err)
		}
		if g.opts.HTTPClient != nil {
			pc.HTTPClient = *g.opts.HTTPClient
		}
		err = openstack.Authenticate(ctx, pc, gophercloud.AuthOptions{
			IdentityEndpoint: g.opts.AuthURL, Username: g.opts.Username, Password: g.opts.Password,
			DomainName: g.opts.UserDomainName, AllowReauth: true,
			Scope: &gophercloud.AuthScope{ProjectName: g.opts.ProjectName, DomainName: g.opts.ProjectDomainName},
		})
		if err != nil {
			return nil, fmt.Errorf("glance: authenticate to keystone %s as %s: %w", g.opts.AuthURL, g.opts.Username, err)
		}
		if g.opts.Endpoint == "" {
			if sc, err = catalogImageClient(pc, g.opts.Region); err != nil {
				return nil, err
			}
		} else {
			sc = &gophercloud.ServiceClient{ProviderClient: pc, Type: "image"}
		}
	}
	if g.opts.Endpoint != "" {
		sc.Endpoint = gophercloud.NormalizeURL(g.opts.Endpoint)
		sc.ResourceBase = ""
	}
	// The Image API lives under v2/ of the endpoint, which may or may not
	// name the version already.
	if sc.ResourceBase == "" {
		sc.ResourceBase = sc.Endpoint
		if !strings.HasSuffix(sc.Endpoint, "/v2/") {
			sc.ResourceBase += "v2/"
		}
	}
	g.client = sc
	return sc, nil
}

// catalogImageClient takes the image endpoint of region (any region when
// empty) from the token's catalog: the internal one, else the public one,
// in Ironic's order ([glance] valid_interfaces = internal, public), since
// a conductor sits on the deployment's internal network.
func catalogImageClient(pc *gophercloud.ProviderClient, region string) (*gophercloud.ServiceClient, error) {
	var notFound *gophercloud.ErrEndpointNotFound
	for _, iface := range []gophercloud.Availability{gophercloud.AvailabilityInternal, gophercloud.AvailabilityPublic} {
		sc, err := openstack.NewImageV2(pc, gophercloud.EndpointOpts{Region: region, Availability: iface})
		if err == nil {
			return sc, nil
		}
		if !errors.As(err, &notFound) {
			return nil, fmt.Errorf("glance: image endpoint from the catalog: %w", err)
		}
	}
	if region == "" {
		return nil, errors.New("glance: the Keystone catalog has no internal or public image endpoint")
	}
	return nil, fmt.Errorf("glance: the Keystone catalog has no internal or public image endpoint in region %q", region)
}

// Image looks an image up; a missing one is ErrNotFound.
func (g *Glance) Image(ctx context.Context, id string) (GlanceImage, error) {
	sc, err := g.serviceClient(ctx)
	if err != nil {
		return GlanceImage{}, err
	}
	img, err := images.Get(ctx, sc, id).Extract()
	if gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		return GlanceImage{}, fmt.Errorf("%w: Glance image %s", ErrNotFound, id)
	}
	if err != nil {
		return GlanceImage{}, fmt.Errorf("glance: image %s: %w", id, err)
	}
	prop := func(k string) string {
		s, _ := img.Properties[k].(string)
		return s
	}
	return GlanceImage{ID: img.ID, Status: string(img.Status), DiskFormat: img.DiskFormat, Size: img.SizeBytes,
		Checksum: img.Checksum, HashAlgo: prop("os_hash_algo"), HashValue: prop("os_hash_value"),
		KernelID: prop("kernel_id"), RamdiskID: prop("ramdisk_id")}, nil
}

// Source is the cache source of an image: named glance://<id>, checked
// against Glance's hash, downloaded through the Image API.
func (g *Glance) Source(img GlanceImage) Source {
	src := Source{URL: "glance://" + img.ID, HashAlgo: img.HashAlgo, HashValue: img.HashValue}
	if src.HashAlgo == "" || src.HashValue == "" {
		src.HashAlgo, src.HashValue, src.Checksum = "", "", img.Checksum
	}
	src.Open = func(ctx context.Context) (io.ReadCloser, error) {
		sc, err := g.serviceClient(ctx)
		if err != nil {
			return nil, err
		}
		res := imagedata.Download(ctx, sc, img.ID)
		if gophercloud.ResponseCodeIs(res.Err, http.StatusNotFound) {
			return nil, fmt.Errorf("%w: data of Glance image %s", ErrNotFound, img.ID)
		}
		if res.Err != nil {
			return nil, fmt.Errorf("glance: download image %s: %w", img.ID, res.Err)
		}
		return res.Body, nil
	}
	return src
}
