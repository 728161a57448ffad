package images_test

import (
	"archive/tar"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/images"
)

var _ = Describe("image tarballs", func() {
	created := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

	// build writes the image of the binary name into dir and returns the
	// tarball's path.
	build := func(dir, name string) string {
		img, err := images.Build(images.Spec{Name: name, Binary: filepath.Join(binDir, name), Version: "1.2.3", Created: created})
		Expect(err).NotTo(HaveOccurred())
		out := filepath.Join(dir, name+".tar")
		Expect(images.WriteTarball(img, "ferricbm/"+name+":1.2.3", out)).To(Succeed())
		return out
	}

	for _, name := range []string{"ferric-api", "ferric-conductor", "ferric"} {
		It("holds a non-root "+name+" that runs --help from the image", func() {
			img, err := tarball.ImageFromPath(build(GinkgoT().TempDir(), name), nil)
			Expect(err).NotTo(HaveOccurred())
			cf, err := img.ConfigFile()
			Expect(err).NotTo(HaveOccurred())
			Expect(cf.Config.Entrypoint).To(Equal([]string{"/usr/bin/" + name}))
			Expect(cf.Config.User).To(Equal("65532:65532"))
			Expect(cf.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.title", name))
			Expect(cf.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", "1.2.3"))
			Expect(cf.OS).To(Equal("linux"))
			Expect(cf.Created.Time.Equal(created)).To(BeTrue())

			// Unpack the filesystem and run the entrypoint from it.
			root := GinkgoT().TempDir()
			files := map[string]*tar.Header{}
			rc := mutate.Extract(img)
			defer rc.Close()
			tr := tar.NewReader(rc)
			for {
				h, err := tr.Next()
				if err == io.EOF {
					break
				}
				Expect(err).NotTo(HaveOccurred())
				files[h.Name] = h
				if h.Typeflag == tar.TypeReg {
					p := filepath.Join(root, filepath.FromSlash(h.Name))
					Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
					f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, os.FileMode(h.Mode).Perm())
					Expect(err).NotTo(HaveOccurred())
					_, err = io.Copy(f, tr)
					Expect(err).NotTo(HaveOccurred())
					Expect(f.Close()).To(Succeed())
				}
			}
			Expect(files).To(HaveKey("etc/passwd"))
			passwd, err := os.ReadFile(filepath.Join(root, "etc", "passwd"))
			Expect(err).NotTo(HaveOccurred())
			Expect(string(passwd)).To(ContainSubstring("nonroot:x:65532:65532:"))
			for _, h := range files {
				Expect(h.ModTime.Equal(created)).To(BeTrue(), h.Name)
			}
			out, err := exec.Command(filepath.Join(root, cf.Config.Entrypoint[0]), "--help").CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), string(out))
			Expect(string(out)).To(ContainSubstring("config"))
		})
	}

	It("is the same, byte for byte, when built twice", func() {
		sum := func(path string) [32]byte {
			data, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			return sha256.Sum256(data)
		}
		digest := func(path string) string {
			img, err := tarball.ImageFromPath(path, nil)
			Expect(err).NotTo(HaveOccurred())
			d, err := img.Digest()
			Expect(err).NotTo(HaveOccurred())
			return d.String()
		}
		a, b := build(GinkgoT().TempDir(), "ferric-api"), build(GinkgoT().TempDir(), "ferric-api")
		Expect(digest(a)).To(Equal(digest(b)))
		Expect(sum(a)).To(Equal(sum(b)))
	})
})
