package publish_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/conductor/vmedia/publish"
	"github.com/ferricbm/ferric/pkg/config"
)

// swiftAdmin talks to the test account directly, with its token, to look
// at what the publisher left there.
type swiftAdmin struct{ token, storage string }

func newSwiftAdmin() swiftAdmin { return swiftAdminOf(swiftConfig()) }

func swiftAdminOf(sw config.Swift) swiftAdmin {
	req, err := http.NewRequest(http.MethodGet, sw.AuthURL, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-Auth-User", sw.Username)
	req.Header.Set("X-Auth-Key", sw.Password)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	Expect(resp.StatusCode).To(Equal(http.StatusOK))
	return swiftAdmin{token: resp.Header.Get("X-Auth-Token"), storage: resp.Header.Get("X-Storage-Url")}
}

func (a swiftAdmin) do(method, path string, header map[string]string) *http.Response {
	req, err := http.NewRequest(method, a.storage+path, nil)
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-Auth-Token", a.token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	resp.Body.Close()
	return resp
}

func fetch(method, u string) (int, []byte, http.Header) {
	req, err := http.NewRequest(method, u, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, body, resp.Header
}

// tamper flips the last hex digit of the temp_url_sig or sig parameter.
func tamper(raw, param string) string {
	u, err := url.Parse(raw)
	Expect(err).NotTo(HaveOccurred())
	q := u.Query()
	sig := q.Get(param)
	Expect(sig).NotTo(BeEmpty())
	last := "0"
	if strings.HasSuffix(sig, "0") {
		last = "1"
	}
	q.Set(param, sig[:len(sig)-1]+last)
	u.RawQuery = q.Encode()
	return u.String()
}

var _ = Describe("Swift publisher", func() {
	var (
		ctx       context.Context
		pub       *publish.Swift
		container string
		admin     swiftAdmin
	)

	BeforeEach(func() {
		ctx = context.Background()
		container = uniqueName("ferric-test")
		var err error
		pub, err = publish.NewSwift(ctx, swiftConfig(), container)
		Expect(err).NotTo(HaveOccurred())
		admin = newSwiftAdmin()
		DeferCleanup(func() {
			for _, name := range []string{"image-a", "image-b", "image-c"} {
				admin.do(http.MethodDelete, "/"+container+"/"+name, nil)
			}
			admin.do(http.MethodDelete, "/"+container, nil)
		})
	})

	It("creates the container and serves the object to GET and HEAD through its temporary URL", func() {
		Expect(admin.do(http.MethodHead, "/"+container, nil).StatusCode).To(Equal(http.StatusNoContent))
		content := randomBytes(1474560)
		Expect(pub.Publish(ctx, "image-a", bytes.NewReader(content), 15*time.Minute)).To(Succeed())

		u, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(u).To(HavePrefix(admin.storage + "/" + container + "/image-a?"))
		Expect(u).To(ContainSubstring("temp_url_sig="))

		code, body, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusOK))
		Expect(bytes.Equal(body, content)).To(BeTrue(), "the temporary URL returns the published bytes")
		code, body, h := fetch(http.MethodHead, u)
		Expect(code).To(Equal(http.StatusOK))
		Expect(body).To(BeEmpty())
		Expect(h.Get("Content-Length")).To(Equal("1474560"))
	})

	It("sets X-Delete-After from the lifetime, and the object is gone once it passes", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("floppy"), 15*time.Minute)).To(Succeed())
		resp := admin.do(http.MethodHead, "/"+container+"/image-a", nil)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		deleteAt, err := strconv.ParseInt(resp.Header.Get("X-Delete-At"), 10, 64)
		Expect(err).NotTo(HaveOccurred())
		Expect(deleteAt).To(BeNumerically("~", float64(time.Now().Add(15*time.Minute).Unix()), 30), "X-Delete-At is now + 900 s")

		Expect(pub.Publish(ctx, "image-b", strings.NewReader("short-lived"), 2*time.Second)).To(Succeed())
		u, err := pub.URL(ctx, "image-b", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		code, _, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusOK))
		Eventually(func() int { code, _, _ := fetch(http.MethodGet, u); return code }).
			WithTimeout(10 * time.Second).WithPolling(500 * time.Millisecond).Should(Equal(http.StatusNotFound))
		Expect(admin.do(http.MethodHead, "/"+container+"/image-b", nil).StatusCode).To(Equal(http.StatusNotFound))
	})

	It("keeps an object without a lifetime", func() {
		Expect(pub.Publish(ctx, "image-c", strings.NewReader("boot iso"), 0)).To(Succeed())
		resp := admin.do(http.MethodHead, "/"+container+"/image-c", nil)
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.Header.Get("X-Delete-At")).To(BeEmpty())
	})

	It("answers 401 to a tampered signature and to an expired URL", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("secret parameters"), 15*time.Minute)).To(Succeed())
		u, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		code, _, _ := fetch(http.MethodGet, tamper(u, "temp_url_sig"))
		Expect(code).To(Equal(http.StatusUnauthorized))
		code, _, _ = fetch(http.MethodHead, tamper(u, "temp_url_sig"))
		Expect(code).To(Equal(http.StatusUnauthorized))

		short, err := pub.URL(ctx, "image-a", time.Second)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func() int { code, _, _ := fetch(http.MethodGet, short); return code }).
			WithTimeout(5 * time.Second).WithPolling(250 * time.Millisecond).Should(Equal(http.StatusUnauthorized))
		code, _, _ = fetch(http.MethodPut, u)
		Expect(code).To(Equal(http.StatusUnauthorized), "a GET signature does not allow writing")
	})

	It("deletes idempotently; the URL then answers 401 or 404", func() {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("floppy"), 15*time.Minute)).To(Succeed())
		u, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		Expect(pub.Delete(ctx, "image-a")).To(Succeed())
		code, _, _ := fetch(http.MethodGet, u)
		Expect(code).To(BeElementOf(http.StatusUnauthorized, http.StatusNotFound))
		Expect(pub.Delete(ctx, "image-a")).To(Succeed())
		Expect(pub.Delete(ctx, "never-published")).To(Succeed())
	})

	It("sets a Temp-URL-Key on an account without one, and never replaces an existing key", func() {
		// The account of the all-in-one's other user, so that changing
		// its key cannot disturb publishers of the test account.
		sw := swiftConfig()
		sw.Username, sw.Password = "admin:admin", "admin"
		keys := swiftAdminOf(sw)
		Expect(keys.do(http.MethodPost, "", map[string]string{"X-Remove-Account-Meta-Temp-URL-Key": "x"}).StatusCode).
			To(Equal(http.StatusNoContent))
		Expect(keys.do(http.MethodHead, "", nil).Header.Get("X-Account-Meta-Temp-Url-Key")).To(BeEmpty())
		fresh, err := publish.NewSwift(ctx, sw, container)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			keys.do(http.MethodDelete, "/"+container+"/image-a", nil)
			keys.do(http.MethodDelete, "/"+container, nil)
		})
		Expect(fresh.Publish(ctx, "image-a", strings.NewReader("floppy"), time.Minute)).To(Succeed())
		u, err := fresh.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		code, _, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusOK))
		Expect(len(keys.do(http.MethodHead, "", nil).Header.Get("X-Account-Meta-Temp-Url-Key"))).To(BeNumerically(">=", 32))

		const operatorKey = "an-operator-chose-this-key-0123456789"
		Expect(keys.do(http.MethodPost, "", map[string]string{"X-Account-Meta-Temp-URL-Key": operatorKey}).StatusCode).
			To(Equal(http.StatusNoContent))
		other, err := publish.NewSwift(ctx, sw, container)
		Expect(err).NotTo(HaveOccurred())
		u, err = other.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		code, _, _ = fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusOK))
		Expect(keys.do(http.MethodHead, "", nil).Header.Get("X-Account-Meta-Temp-Url-Key")).To(Equal(operatorKey))
	})

	It("authenticates again when Swift forgets its token", NodeTimeout(time.Minute), func(ctx SpecContext) {
		Expect(pub.Publish(ctx, "image-a", strings.NewReader("before"), time.Minute)).To(Succeed())
		// tempauth keeps its tokens only in memcached (the proxy port - 4).
		auth, err := url.Parse(swiftConfig().AuthURL)
		Expect(err).NotTo(HaveOccurred())
		port, err := strconv.Atoi(auth.Port())
		Expect(err).NotTo(HaveOccurred())
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port-4)))
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		_, err = conn.Write([]byte("flush_all\r\n"))
		Expect(err).NotTo(HaveOccurred())
		reply, err := bufio.NewReader(conn).ReadString('\n')
		Expect(err).NotTo(HaveOccurred())
		Expect(reply).To(Equal("OK\r\n"))
		Expect(admin.do(http.MethodHead, "", nil).StatusCode).To(Equal(http.StatusUnauthorized), "the old tokens are gone")

		content := randomBytes(4096)
		Expect(pub.Publish(ctx, "image-a", bytes.NewReader(content), time.Minute)).To(Succeed())
		admin = newSwiftAdmin()
		u, err := pub.URL(ctx, "image-a", time.Minute)
		Expect(err).NotTo(HaveOccurred())
		code, body, _ := fetch(http.MethodGet, u)
		Expect(code).To(Equal(http.StatusOK))
		Expect(bytes.Equal(body, content)).To(BeTrue(), "the upload retried after authenticating again is whole")
	})

	It("refuses names that are not one plain path segment", func() {
		for _, name := range []string{"", "../image-a", "a/b", ".hidden", "a b"} {
			Expect(pub.Publish(ctx, name, strings.NewReader("x"), time.Minute)).To(MatchError(ContainSubstring("not a valid name")))
			_, err := pub.URL(ctx, name, time.Minute)
			Expect(err).To(HaveOccurred())
			Expect(pub.Delete(ctx, name)).NotTo(Succeed())
		}
	})

	It("reports a wrong key without showing it", func() {
		sw := swiftConfig()
		sw.Password = "wrong-key-4f9a"
		_, err := publish.NewSwift(ctx, sw, container)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(ContainSubstring("Swift v1 auth"))
		Expect(err.Error()).NotTo(ContainSubstring(sw.Password))
	})

	It("needs [swift] auth_type", func() {
		_, err := publish.NewSwift(ctx, config.Swift{}, container)
		Expect(err).To(MatchError(ContainSubstring("Swift is not configured")))
	})
})
