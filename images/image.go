// Package images builds Ferric's container images from static binaries,
// without a container engine: one layer holding the binary (and, on an
// empty base, the files a non-root static binary needs), written as an
// image tarball that `docker load`, `podman load` or `crane push` take.
// The same inputs give the same bytes: every timestamp is fixed, files go
// in sorted order with fixed owners.
package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// User is the unprivileged account every image runs as; the Helm chart's
// securityContext uses the same ids.
const (
	UID  = 65532
	User = "65532:65532"
)

// BinDir is where the binary lies in the image; the entrypoint is
// BinDir/<name>.
const BinDir = "/usr/bin"

// Spec describes one image.
type Spec struct {
	// Name is the binary's name, which is also the image's.
	Name string
	// Binary is the path of the statically linked binary to ship.
	Binary string
	// Version goes into the org.opencontainers.image.version label.
	Version string
	// Created is the timestamp of the image and its files (fixed, for
	// reproducible builds).
	Created time.Time
	// CABundle, when set, is copied to /etc/ssl/certs/ca-certificates.crt,
	// for HTTPS to Keystone, Glance and BMCs.
	CABundle string
	// Base is the image to add the binary to; nil means an empty image, to
	// which the account files are added too.
	Base v1.Image
}

// file is one entry of the layer.
type file struct {
	path string
	mode int64
	data []byte
	dir  bool
}

// Build returns the image of spec.
func Build(spec Spec) (v1.Image, error) {
	bin, err := os.ReadFile(spec.Binary)
	if err != nil {
		return nil, fmt.Errorf("read binary of %s: %w", spec.Name, err)
	}
	files := []file{
		{path: "usr", mode: 0o755, dir: true},
		{path: "usr/bin", mode: 0o755, dir: true},
		{path: "usr/bin/" + spec.Name, mode: 0o755, data: bin},
		{path: "tmp", mode: 0o1777, dir: true},
	}
	if spec.Base == nil {
		files = append(files,
			file{path: "etc", mode: 0o755, dir: true},
			file{path: "etc/passwd", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)},
			file{path: "etc/group", mode: 0o644, data: fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", UID)},
			file{path: "home", mode: 0o755, dir: true},
			file{path: "home/nonroot", mode: 0o700, dir: true},
		)
	}
	if spec.CABundle != "" {
		ca, err := os.ReadFile(spec.CABundle)
		if err != nil {
			return nil, fmt.Errorf("read CA bundle: %w", err)
		}
		files = append(files,
			file{path: "etc", mode: 0o755, dir: true},
			file{path: "etc/ssl", mode: 0o755, dir: true},
			file{path: "etc/ssl/certs", mode: 0o755, dir: true},
			file{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca})
	}
	layerTar, err := tarOf(files, spec.Created)
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", spec.Name, err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("layer of %s: %w", spec.Name, err)
	}

	base := spec.Base
	if base == nil {
		base = mutate.MediaType(empty.Image, types.OCIManifestSchema1)
		base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{Created: v1.Time{Time: spec.Created}, CreatedBy: "ferric-image " + spec.Name, Comment: "static binary"}})
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", spec.Name, err)
	}
	cf = cf.DeepCopy()
	cf.Created = v1.Time{Time: spec.Created}
	// make images builds the binaries here, for this architecture.
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config.Entrypoint = []string{path.Join(BinDir, spec.Name)}
	cf.Config.Cmd = nil
	cf.Config.User = User
	cf.Config.WorkingDir = "/tmp"
	if cf.Config.Labels == nil {
		cf.Config.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.title":       spec.Name,
		"org.opencontainers.image.description": "Ferric " + spec.Name + ": OpenStack Bare Metal (Ironic) API service",
		"org.opencontainers.image.version":     spec.Version,
		"org.opencontainers.image.source":      "https://github.com/ferricbm/ferric",
	} {
		cf.Config.Labels[k] = v
	}
	return mutate.ConfigFile(img, cf)
}

// tarOf writes files, deduplicated and sorted by path, with fixed owners and
// times.
func tarOf(files []file, mtime time.Time) ([]byte, error) {
	byPath := map[string]file{}
	for _, f := range files {
		byPath[f.path] = f
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		h := &tar.Header{Name: p, Mode: f.mode, ModTime: mtime, Format: tar.FormatPAX, Uname: "root", Gname: "root"}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, p+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if p == "home/nonroot" {
			h.Uid, h.Gid, h.Uname, h.Gname = UID, UID, "nonroot", "nonroot"
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteTarball writes img tagged ref to the file at path.
func WriteTarball(img v1.Image, ref, path string) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("image reference %q: %w", ref, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
