// Command ferric-image writes the image tarballs of ferric-api,
// ferric-conductor and ferric (for the chart's dbsync hook) from static
// binaries, without a container engine (`make images`):
//
//	ferric-image -bin-dir bin/static -out-dir bin/images -version 0.1.0 \
//	    [-repository ferricbm/] [-ca-bundle FILE] [-base IMAGE.tar]
//
// -base puts the binaries on an image saved as a tarball instead of an empty
// one, e.g. a distribution image with ipmitool for the conductor.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ferricbm/ferric/images"
)

// names are the images the Helm chart runs.
var names = []string{"ferric-api", "ferric-conductor", "ferric"}

func main() {
	fs := flag.NewFlagSet("ferric-image", flag.ExitOnError)
	binDir := fs.String("bin-dir", "bin/static", "directory of the static binaries")
	outDir := fs.String("out-dir", "bin/images", "directory the <name>.tar image tarballs are written to")
	version := fs.String("version", "0.1.0", "image tag and version label")
	repository := fs.String("repository", "ferricbm/", "prefix of the image names")
	caBundle := fs.String("ca-bundle", "", "CA certificates to ship as /etc/ssl/certs/ca-certificates.crt")
	base := fs.String("base", "", "image tarball to build on (default: an empty image)")
	// A fixed date, not the build's: the same inputs give the same image.
	created := fs.String("created", "2025-01-01T00:00:00Z", "timestamp of the images and their files (RFC 3339)")
	_ = fs.Parse(os.Args[1:])
	if err := run(*binDir, *outDir, *version, *repository, *caBundle, *base, *created); err != nil {
		fmt.Fprintln(os.Stderr, "ferric-image:", err)
		os.Exit(1)
	}
}

func run(binDir, outDir, version, repository, caBundle, basePath, createdAt string) error {
	created, err := time.Parse(time.RFC3339, createdAt)
	if err != nil {
		return fmt.Errorf("-created: %w", err)
	}
	var base v1.Image
	if basePath != "" {
		if base, err = tarball.ImageFromPath(basePath, nil); err != nil {
			return fmt.Errorf("base image %s: %w", basePath, err)
		}
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	for _, n := range names {
		img, err := images.Build(images.Spec{Name: n, Binary: filepath.Join(binDir, n), Version: version,
			Created: created, CABundle: caBundle, Base: base})
		if err != nil {
			return err
		}
		out := filepath.Join(outDir, n+".tar")
		if err := images.WriteTarball(img, repository+n+":"+version, out); err != nil {
			return err
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s%s:%s %s\n", out, repository, n, version, digest)
	}
	return nil
}
