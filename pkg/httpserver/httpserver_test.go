package httpserver_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/httpserver"
)

// serve runs a server of h with the limits l on a free local port and
// returns its address.
func serve(h http.Handler, l httpserver.Limits) string {
	GinkgoHelper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	srv := httpserver.New(h, l)
	go func() { _ = srv.Serve(ln) }()
	DeferCleanup(srv.Close)
	return ln.Addr().String()
}

var _ = Describe("Server limits", func() {
	It("cuts off a client that trickles its request body after the read timeout", func() {
		bodyErr := make(chan error, 1)
		addr := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			bodyErr <- err
		}), httpserver.Limits{ReadTimeout: 300 * time.Millisecond})

		conn, err := net.Dial("tcp", addr)
		Expect(err).NotTo(HaveOccurred())
		defer conn.Close()
		_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
		Expect(err).NotTo(HaveOccurred())
		// One byte every 50 ms: the body would take well over an hour.
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte("x")); err != nil {
						return
					}
				}
			}
		}()
		var got error
		Eventually(bodyErr).WithTimeout(10 * time.Second).Should(Receive(&got))
		var netErr net.Error
		Expect(errors.As(got, &netErr) && netErr.Timeout()).To(BeTrue(), "the body read ends in a timeout: %v", got)
	})

	It("answers 431 to request headers larger than the limit", func() {
		addr := serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
			httpserver.Limits{ReadTimeout: 5 * time.Second, MaxHeaderBytes: 1024})
		req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("X-Padding", strings.Repeat("a", 16<<10))
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusRequestHeaderFieldsTooLarge))

		By("serving requests within the limit")
		resp, err = http.Get("http://" + addr + "/")
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
	})

	Describe("with a per-write timeout", func() {
		// big writes 32 MiB, more than socket buffers hold, and reports how
		// its writing ended.
		var writeErr chan error
		big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", fmt.Sprint(32<<20))
			chunk := make([]byte, 32<<10)
			var err error
			for i := 0; i < 1024 && err == nil; i++ {
				_, err = w.Write(chunk)
			}
			writeErr <- err
		})
		BeforeEach(func() { writeErr = make(chan error, 1) })

		It("lets a slow download that keeps making progress run longer than the timeout", func() {
			addr := serve(big, httpserver.Limits{WriteTimeout: 500 * time.Millisecond, PerWrite: true})
			resp, err := http.Get("http://" + addr + "/")
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			var n int64
			for {
				// A slow client: 1 MiB, then a pause far shorter than the
				// timeout; the 32 pauses alone last about twice the timeout.
				m, err := io.CopyN(io.Discard, resp.Body, 1<<20)
				n += m
				if err != nil {
					Expect(err).To(Equal(io.EOF))
					break
				}
				time.Sleep(30 * time.Millisecond)
			}
			Expect(n).To(Equal(int64(32 << 20)))
			Eventually(writeErr).Should(Receive(BeNil()))
		})

		It("cuts off a client that stops reading", func() {
			addr := serve(big, httpserver.Limits{WriteTimeout: 300 * time.Millisecond, PerWrite: true})
			conn, err := net.Dial("tcp", addr)
			Expect(err).NotTo(HaveOccurred())
			defer conn.Close()
			_, err = fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			Expect(err).NotTo(HaveOccurred())
			_, err = http.ReadResponse(bufio.NewReader(conn), nil)
			Expect(err).NotTo(HaveOccurred())
			var got error
			Eventually(writeErr).WithTimeout(10 * time.Second).Should(Receive(&got))
			Expect(got).To(HaveOccurred(), "the server gave up writing to a client that reads nothing")
		})
	})
})
