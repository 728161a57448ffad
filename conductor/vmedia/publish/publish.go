// Package publish puts virtual media (the iLO parameter floppy, boot ISOs)
// where a BMC can fetch them over HTTP, behind temporary URLs that nobody can
// guess and that stop working after a while: the floppy carries the deploy
// key, and the provisioning network is shared. Two backends exist: Swift
// (temporary URLs signed with the account's key) and the conductor's own
// boot file server (URLs signed with a per-conductor secret). See
// docs/vmedia-publishing.md.
package publish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ferricbm/ferric/pkg/config"
)

// Publisher stores named files for a BMC to read.
type Publisher interface {
	// Publish stores r under name, replacing what was there. A positive
	// lifetime makes the file disappear after it; zero keeps it until
	// Delete.
	Publish(ctx context.Context, name string, r io.Reader, lifetime time.Duration) error
	// URL is a new temporary URL of name that answers GET and HEAD for
	// ttl. It is a credential while valid: never log it.
	URL(ctx context.Context, name string, ttl time.Duration) (string, error)
	// Delete removes name; a name already gone is not an error.
	Delete(ctx context.Context, name string) error
}

// FloppyName is the object holding a node's parameter floppy.
func FloppyName(nodeUUID string) string { return "image-" + nodeUUID }

// BootISOName is the object holding a node's generated boot ISO.
func BootISOName(nodeUUID string) string { return "boot-" + nodeUUID }

// validName keeps names to one path segment with nothing to escape, so a
// name cannot reach outside the web server's folder or another container,
// and the signed path is the path the server receives.
var validName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$`)

func checkName(name string) error {
	if !validName.MatchString(name) {
		return fmt.Errorf("publish: %q is not a valid name (letters, digits, '.', '_', '-'; not starting with '.')", name)
	}
	return nil
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Second {
		return fmt.Errorf("publish: URL lifetime %s is under a second", ttl)
	}
	return nil
}

// New is the publisher [ilo] use_web_server_for_images chooses: the boot
// file server's folder <[deploy] http_root>/vmedia, or the [ilo]
// swift_ilo_container of the [swift] account.
func New(ctx context.Context, cfg config.Config) (Publisher, error) {
	if cfg.ILO.UseWebServerForImages {
		if cfg.Deploy.HTTPURL == "" {
			return nil, errors.New("publish: [ilo] use_web_server_for_images needs [deploy] http_url")
		}
		return NewWebServer(filepath.Join(cfg.Deploy.HTTPRoot, strings.Trim(Prefix, "/")), cfg.Deploy.HTTPURL)
	}
	return NewSwift(ctx, cfg.Swift, cfg.ILO.SwiftILOContainer)
}
