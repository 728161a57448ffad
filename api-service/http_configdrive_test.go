package apiservice_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/model"
	"github.com/ferricbm/ferric/pkg/states"
)

// gzipBase64 is a config drive as clients send it: size random bytes,
// gzipped (they do not shrink) and base64-encoded.
func gzipBase64(size int) string {
	raw := make([]byte, size)
	_, _ = rand.Read(raw)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(raw)
	Expect(zw.Close()).To(Succeed())
	return base64.StdEncoding.EncodeToString(gz.Bytes())
}

// storedDrive is the config drive a node's instance_info refers to.
func (e *env) storedDrive(uuid string) string {
	GinkgoHelper()
	n := e.node(uuid)
	id, ok := model.StoredConfigDriveID(n.InstanceInfo["configdrive"])
	Expect(ok).To(BeTrue(), "instance_info refers to a stored drive, got %.60v", n.InstanceInfo["configdrive"])
	cd, err := e.store.ConfigDrive(context.Background(), n.ID, id)
	Expect(err).NotTo(HaveOccurred())
	return cd
}

func (e *env) availableNode() string {
	uuid := e.createNode("")
	e.setState(uuid, states.Available)
	return uuid
}

var _ = Describe("config drives on states/provision", func() {
	var e *env
	deploy := func(uuid, body string) response {
		return e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", body)
	}

	Context("on MySQL", func() {
		BeforeEach(func() { e = mysqlEnv() })

		It("stores an 8 MiB drive apart from the node, keeps node reads small, and drops it at undeploy", func() {
			uuid := e.availableNode()
			cd := gzipBase64(6 << 20)
			Expect(len(cd)).To(BeNumerically(">", 8<<20))
			r := deploy(uuid, `{"target": "active", "configdrive": "`+cd+`"}`)
			Expect(r.status).To(Equal(http.StatusAccepted), string(r.raw))
			Eventually(e.provisionState(uuid), wait).Should(Equal(string(states.Active)))

			Expect(e.storedDrive(uuid)).To(Equal(cd), "the conductor reads back the bytes sent")
			got := e.at("latest", http.MethodGet, "/v1/nodes/"+uuid, "")
			Expect(got.status).To(Equal(http.StatusOK))
			Expect(len(got.raw)).To(BeNumerically("<", 8<<10), "a node GET does not carry the drive")
			Expect(got.json()["instance_info"]).To(HaveKeyWithValue("configdrive", "******"))

			n := e.node(uuid)
			id, _ := model.StoredConfigDriveID(n.InstanceInfo["configdrive"])
			Expect(deploy(uuid, `{"target": "deleted"}`).status).To(Equal(http.StatusAccepted))
			Eventually(e.provisionState(uuid), wait).Should(Equal(string(states.Available)))
			Expect(e.node(uuid).InstanceInfo).NotTo(HaveKey("configdrive"))
			_, err := e.store.ConfigDrive(context.Background(), n.ID, id)
			Expect(err).To(MatchError(ContainSubstring("not found")), "undeploy deletes the drive")
		})
	})

	Context("on SQLite", func() {
		BeforeEach(func() { e = sqliteEnv(nil) })

		It("stores the string as JSON decodes it, whatever its escapes and key spelling", func() {
			uuid := e.availableNode()
			body := `{"config\u0064rive": "http:\/\/198.51.100.5\/cd.iso?a=\u00e9\ud83d\ude00\n", "target": "active"}`
			Expect(deploy(uuid, body).status).To(Equal(http.StatusAccepted))
			Eventually(e.provisionState(uuid), wait).Should(Equal(string(states.Active)))
			Expect(e.storedDrive(uuid)).To(Equal("http://198.51.100.5/cd.iso?a=é😀\n"))
		})

		It("keeps the last of duplicate configdrive keys, a string or not", func() {
			uuid := e.availableNode()
			Expect(deploy(uuid, `{"configdrive": "H4sIfirst", "target": "active", "configdrive": "H4sIlast"}`).status).To(Equal(http.StatusAccepted))
			Eventually(e.provisionState(uuid), wait).Should(Equal(string(states.Active)))
			Expect(e.storedDrive(uuid)).To(Equal("H4sIlast"))

			other := e.availableNode()
			r := deploy(other, `{"configdrive": "H4sIdropped", "target": "active", "configdrive": {"user_data": "x"}}`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(r.fault()["faultstring"]).To(Equal("Invalid configdrive format: a JSON object needs API version 1.56"))
			Expect(e.node(other).InstanceInfo).To(BeEmpty())
		})

		It("refuses a malformed drive string or body with 400 and stores nothing", func() {
			uuid := e.availableNode()
			for _, body := range []string{
				`{"target": "active", "configdrive": "H4sI\x"}`,
				`{"target": "active", "configdrive": "H4sI` + "\n" + `"}`,
				`{"target": "active", "configdrive": "H4sI\u12"}`,
				`{"target": "active", "configdrive": "H4sI"`,
				`{"target": "active", "configdrive": "H4sI" "x"}`,
				`["configdrive", "H4sI"]`,
			} {
				r := deploy(uuid, body)
				Expect(r.status).To(Equal(http.StatusBadRequest), body)
				Expect(r.fault()["faultstring"]).To(ContainSubstring("JSON"), body)
			}
			Expect(e.provisionState(uuid)()).To(Equal(string(states.Available)))
			Expect(e.node(uuid).InstanceInfo).NotTo(HaveKey("configdrive"))
		})

		It("leaves the node and the drive table alone when the request is refused", func() {
			uuid := e.createNode("")
			r := deploy(uuid, `{"target": "active", "configdrive": "`+strings.Repeat("A", 2<<20)+`"}`)
			Expect(r.status).To(Equal(http.StatusBadRequest))
			Expect(e.node(uuid).InstanceInfo).To(BeEmpty())
		})

		It("holds the rest of the body to max_request_body_size", func() {
			uuid := e.availableNode()
			big := `{"target": "active", "configdrive": "H4sI", "extra": ["` + strings.Repeat("x", 1<<20) + `"]}`
			r := deploy(uuid, big)
			Expect(r.status).To(Equal(http.StatusRequestEntityTooLarge))
			Expect(r.json()["faultstring"]).To(ContainSubstring("Larger than max_request_body_size (1048576)"))
		})
	})

	It("reads at most max_concurrent_large_bodies large bodies at once, refusing more with 503", func() {
		e = sqliteEnv(func(c *config.Config) { c.API.MaxConcurrentLargeBodies = 1 })
		// An enrolled node: every deploy is refused, after its body is read.
		uuid := e.createNode("")
		path := e.url + "/v1/nodes/" + uuid + "/states/provision"
		send := func(body io.Reader) int {
			req, err := http.NewRequest(http.MethodPut, path, body)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
			// Unknown length: as large as the route allows.
			req.ContentLength = -1
			resp, err := httpClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			return resp.StatusCode
		}
		probe := func() int { return send(strings.NewReader(`{"target": "bogus"}`)) }

		// held is a large request whose body has not ended yet.
		var held *io.PipeWriter
		var heldStatus chan int
		finishHeld := func() int {
			// Returns at once if the request already ended (503).
			_, _ = held.Write([]byte(`AAAA"}`))
			Expect(held.Close()).To(Succeed())
			return <-heldStatus
		}
		DeferCleanup(func() {
			if held != nil {
				held.CloseWithError(io.ErrUnexpectedEOF)
			}
		})
		// A probe sent before the held request reaches the handler takes the
		// slot itself; then the held one may be refused: try again.
		Eventually(func() int {
			if held != nil {
				finishHeld()
			}
			pr, pw := io.Pipe()
			held, heldStatus = pw, make(chan int, 1)
			go func() {
				defer GinkgoRecover()
				heldStatus <- send(io.MultiReader(strings.NewReader(`{"target": "active", "configdrive": "H4sI`), pr))
			}()
			return probe()
		}).Should(Equal(http.StatusServiceUnavailable))

		small := e.at("latest", http.MethodPut, "/v1/nodes/"+uuid+"/states/provision", `{"target": "bogus"}`)
		Expect(small.status).To(Equal(http.StatusBadRequest), "small bodies are not held back")
		Expect(finishHeld()).To(Equal(http.StatusBadRequest), "the held body was read to its end")
		held = nil
		Expect(probe()).To(Equal(http.StatusBadRequest), "the slot is free again")
	})

	It("keeps a share of the large-body slots free of any one client, and drops a body trickled below the minimum rate with 408", func() {
		e = sqliteEnv(nil) // max_concurrent_large_bodies 4: a share of one
		uuid := e.createNode("")
		path := e.url + "/v1/nodes/" + uuid + "/states/provision"
		// other is a second client, on another loopback address.
		other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
			LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}).DialContext}}
		send := func(client *http.Client, body io.Reader) (int, string) {
			req, err := http.NewRequest(http.MethodPut, path, body)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-OpenStack-Ironic-API-Version", "latest")
			req.ContentLength = 20000000
			resp, err := client.Do(req)
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(raw)
		}
		type answer struct {
			status int
			body   string
		}
		// Three bodies from one client, a byte a second: far below the
		// minimum rate.
		slow := make(chan answer, 3)
		// sending says a slow body's first trickled byte has left: its
		// request is in, and holds its slot before the probes below.
		sending := make(chan struct{}, 3)
		for range 3 {
			pr, pw := io.Pipe()
			DeferCleanup(func() { pw.CloseWithError(io.ErrUnexpectedEOF) })
			go func() {
				defer GinkgoRecover()
				status, body := send(httpClient, io.MultiReader(strings.NewReader(`{"target": "active", "configdrive": "H4sI`), pr))
				slow <- answer{status, body}
			}()
			go func() {
				for i := range 30 {
					if _, err := pw.Write([]byte("A")); err != nil {
						return
					}
					if i == 0 {
						sending <- struct{}{}
					}
					time.Sleep(time.Second)
				}
			}()
		}
		for range 3 {
			Eventually(sending, "10s").Should(Receive())
		}
		// The slow bodies keep their slots for the 5 s grace before the
		// rate rule drops them: the probes run inside that window.
		bogus := `{"target": "bogus", "configdrive": "` + strings.Repeat("A", 20000000-38) + `"}`
		Eventually(func() string {
			_, body := send(httpClient, strings.NewReader(bogus))
			return body
		}, "4s").Should(ContainSubstring("from this client"), "the fourth slot is kept for the others")
		status, body := send(other, strings.NewReader(bogus))
		Expect(status).To(Equal(http.StatusBadRequest), "another client gets the slot kept free: "+body)

		for range 3 {
			var got answer
			Eventually(slow, "20s").Should(Receive(&got))
			Expect(got.status).To(Equal(http.StatusRequestTimeout), got.body)
			Expect(got.body).To(ContainSubstring("arrived too slowly"))
		}
		status, _ = send(httpClient, strings.NewReader(bogus))
		Expect(status).To(Equal(http.StatusBadRequest), "the slots are free again")
	})
})
