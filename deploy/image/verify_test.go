package image_test

import (
	"crypto/md5"
	"crypto/sha512"
	"encoding/hex"
	"io"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
)

var _ = Describe("Verifier", func() {
	const content = "a deploy ISO"
	md5Of := func(s string) string { sum := md5.Sum([]byte(s)); return hex.EncodeToString(sum[:]) }
	sha512Of := func(s string) string { sum := sha512.Sum512([]byte(s)); return hex.EncodeToString(sum[:]) }

	read := func(src image.Source) (string, *image.Verifier, error) {
		GinkgoHelper()
		v, err := image.NewVerifier(src, strings.NewReader(content))
		Expect(err).NotTo(HaveOccurred())
		got, err := io.ReadAll(v)
		return string(got), v, err
	}

	It("passes content that matches os_hash_value, or the checksum", func() {
		for _, src := range []image.Source{
			{URL: "glance://x", HashAlgo: "sha512", HashValue: sha512Of(content)},
			{URL: "glance://x", Checksum: md5Of(content)},
			{URL: "glance://x"},
		} {
			got, v, err := read(src)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(Equal(content))
			Expect(v.Err()).NotTo(HaveOccurred())
		}
	})

	It("fails the end of content that does not match, and remembers it", func() {
		_, v, err := read(image.Source{URL: "https://images/deploy.iso?temp_url_sig=secret", HashAlgo: "sha512", HashValue: sha512Of("other")})
		Expect(err).To(MatchError(image.ErrChecksumMismatch))
		Expect(v.Err()).To(MatchError(image.ErrChecksumMismatch))
		Expect(err.Error()).To(ContainSubstring("sha512 of https://images/deploy.iso is " + sha512Of(content) + ", expected " + sha512Of("other")))
		Expect(err.Error()).NotTo(ContainSubstring("secret"))

		_, v, err = read(image.Source{URL: "glance://x", Checksum: md5Of("other")})
		Expect(err).To(MatchError(image.ErrChecksumMismatch))
		Expect(v.Err()).To(MatchError(image.ErrChecksumMismatch))
	})

	It("refuses a checksum it cannot check", func() {
		_, err := image.NewVerifier(image.Source{HashAlgo: "crc32", HashValue: "abcd"}, strings.NewReader(content))
		Expect(err).To(MatchError(ContainSubstring(`unsupported image hash algorithm "crc32"`)))
	})
})
