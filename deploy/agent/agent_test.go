package agent_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/ferricbm/ferric/deploy/agent"
	"github.com/ferricbm/ferric/deploy/bootloader/grubroot"
	"github.com/ferricbm/ferric/deploy/iscsi"
)

// randomDisk creates a file-backed disk holding pseudo-random "old tenant" data.
func randomDisk(dir, name string, size int) string {
	data := make([]byte, size)
	_, _ = rand.NewChaCha8([32]byte{byte(len(name))}).Read(data)
	p := filepath.Join(dir, name)
	Expect(os.WriteFile(p, data, 0o600)).To(Succeed())
	return p
}

func content(path string) []byte {
	b, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return b
}

func allZero(b []byte) bool { return bytes.Count(b, []byte{0}) == len(b) }

// running is an agent in agent mode started by a spec.
type running struct {
	*agent.Agent
	base   string
	cancel context.CancelFunc
	exited chan struct{} // closed when Run has returned, with its error in err
	err    error
}

// stop cancels Run and waits for it to return.
func (r *running) stop() {
	GinkgoHelper()
	r.cancel()
	Eventually(r.exited).WithTimeout(30 * time.Second).Should(BeClosed())
}

func startAgent(cfg agent.Config) *running {
	GinkgoHelper()
	a, err := agent.New(cfg)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Agent: a, base: "http://" + cfg.Listen, cancel: cancel, exited: make(chan struct{})}
	go func() {
		r.err = a.Run(ctx)
		close(r.exited)
	}()
	DeferCleanup(r.stop)
	Eventually(func() error {
		resp, err := http.Get(r.base + "/v1/status")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}).Should(Succeed())
	return r
}

// call sends an agent API request, with token in the agent token header
// unless empty, and decodes the JSON answer.
func call(method, u, token string, body any) (int, map[string]any) {
	GinkgoHelper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		Expect(err).NotTo(HaveOccurred())
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u, rd)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set(agent.TokenHeader, token)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var out map[string]any
	Expect(json.NewDecoder(resp.Body).Decode(&out)).To(Succeed())
	return resp.StatusCode, out
}

func (r *running) command(name string, params map[string]any, wait bool, token string) (int, map[string]any) {
	GinkgoHelper()
	q := url.Values{"wait": {fmt.Sprint(wait)}}
	return call(http.MethodPost, r.base+"/v1/commands?"+q.Encode(), token, map[string]any{"name": name, "params": params})
}

// finished waits for an async command and returns its final result.
func (r *running) finished(id, token string) map[string]any {
	GinkgoHelper()
	code, res := call(http.MethodGet, r.base+"/v1/commands/"+id+"?wait=true", token, nil)
	Expect(code).To(Equal(http.StatusOK))
	return res
}

// gate is an erase hook that holds the erase between overwrite and verification
// until released, and can damage the disk there.
type gate struct {
	reached chan string
	release chan struct{}
	damage  func(dev string) error
}

func newGate() *gate { return &gate{reached: make(chan string, 4), release: make(chan struct{})} }

func (g *gate) BeforeVerify(dev string) error {
	g.reached <- dev
	<-g.release
	if g.damage != nil {
		return g.damage(dev)
	}
	return nil
}

var _ = Describe("agent mode", func() {
	var (
		api  *fakeIronic
		dir  string
		disk string
		cfg  agent.Config
	)

	BeforeEach(func() {
		api = newFakeIronic()
		dir = GinkgoT().TempDir()
		disk = randomDisk(dir, "sda.img", 8<<20)
		cfg = agent.Config{
			Params:            agent.ParseCmdline("ipa-api-url=" + api.URL + "/ BOOTIF=01-52-54-00-12-34-56 coreos.configdrive=0"),
			Disks:             []string{disk},
			Listen:            freeAddr(),
			Portal:            freeAddr(),
			TgtdControlPort:   controlPort(),
			TgtdLog:           filepath.Join(dir, "tgtd.log"),
			MACs:              []string{"52:54:00:aa:bb:cc"},
			HeartbeatInterval: time.Hour,
			LookupBackoff:     10 * time.Millisecond,
			LookupMaxBackoff:  20 * time.Millisecond,
			Log:               testLogger(),
		}
	})

	It("serves its command API with the configured header size limit", func() {
		cfg.Server.MaxHeaderBytes = 2 << 10
		a := startAgent(cfg)
		get := func(header string) int {
			req, err := http.NewRequest(http.MethodGet, a.base+"/v1/status", nil)
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set("X-Padding", header)
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			return resp.StatusCode
		}
		Expect(get(strings.Repeat("a", 1<<10))).To(Equal(http.StatusOK))
		// net/http allows 4 KiB beyond the limit for the request line.
		Expect(get(strings.Repeat("a", 16<<10))).To(Equal(http.StatusRequestHeaderFieldsTooLarge))
	})

	Describe("lookup and heartbeats", func() {
		It("retries lookup until the node is found, with microversion 1.22 and every MAC", func() {
			api.lookupFailures = 3
			a := startAgent(cfg)
			Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))
			lookups := api.calls("/v1/lookup")
			Expect(lookups).To(HaveLen(4))
			for _, l := range lookups {
				Expect(l.Method).To(Equal(http.MethodGet))
				Expect(l.Version).To(Equal("1.22"))
				Expect(l.Query["addresses"]).To(Equal([]string{"52:54:00:aa:bb:cc,52:54:00:12:34:56"}))
				Expect(l.Query).NotTo(HaveKey("node_uuid"))
			}
		})

		It("gives up lookup after its timeout", func() {
			api.lookupFailures = 1 << 30
			// Room for several tries at 10-20 ms backoff even when one
			// lookup is slow.
			cfg.LookupTimeout = 2 * time.Second
			a, err := agent.New(cfg)
			Expect(err).NotTo(HaveOccurred())
			Expect(a.Run(context.Background())).To(MatchError(agent.ErrLookupFailed))
			Expect(len(api.calls("/v1/lookup"))).To(BeNumerically(">=", 2))
		})

		It("sends node_uuid when the command line has ipa-node-uuid", func() {
			cfg.Params = agent.ParseCmdline("ipa-api-url=" + api.URL + " ipa-node-uuid=" + api.nodeUUID)
			a := startAgent(cfg)
			Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))
			Expect(api.calls("/v1/lookup")[0].Query["node_uuid"]).To(Equal([]string{api.nodeUUID}))
		})

		It("heartbeats at the configured interval with callback URL, token and version", func() {
			cfg.HeartbeatInterval = 20 * time.Millisecond
			startAgent(cfg)
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).Should(BeNumerically(">=", 4))
			for _, hb := range api.calls(path) {
				Expect(hb.Method).To(Equal(http.MethodPost))
				Expect(hb.Version).To(Equal("1.36"))
				Expect(hb.Body).To(Equal(map[string]any{"callback_url": "http://" + cfg.Listen,
					"agent_token": "agent-token-1", "agent_version": agent.Version}))
			}
		})

		It("derives the interval from heartbeat_timeout: 0.3 to 0.6 of it", func() {
			cfg.HeartbeatInterval = 0
			api.heartbeatTimeout = 0.2 // seconds: heartbeats every 60-120 ms
			startAgent(cfg)
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).WithTimeout(5 * time.Second).Should(BeNumerically(">=", 3))
		})

		It("keeps heartbeating through a long run of failures, never faster than a few ms apart nor slower than its interval", func() {
			cfg.HeartbeatInterval = 0
			api.heartbeatTimeout = 0.05 // seconds: heartbeats every 15-30 ms
			// Enough failures for a back-off growing ×2.7 from 1 s to pass
			// the largest time.Duration, where an unbounded one went negative
			// and the loop spun.
			api.heartbeatFailures = 40
			startAgent(cfg)
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).WithTimeout(10 * time.Second).Should(BeNumerically(">=", 45))
			calls := api.calls(path)
			for i := 1; i < len(calls); i++ {
				gap := calls[i].At.Sub(calls[i-1].At)
				Expect(gap).To(BeNumerically(">=", 5*time.Millisecond), "heartbeat %d", i)
				Expect(gap).To(BeNumerically("<", 200*time.Millisecond), "heartbeat %d", i)
			}
		})

		It("heartbeats at once when an asynchronous command finishes", func() {
			a := startAgent(cfg)
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).Should(Equal(1))
			_, res := a.command("clean.execute_clean_step", map[string]any{
				"step": map[string]any{"step": "erase_devices_metadata", "interface": "deploy", "priority": 99}},
				false, api.token)
			Expect(a.finished(res["id"].(string), api.token)["command_status"]).To(Equal("SUCCEEDED"))
			Eventually(func() int { return len(api.calls(path)) }).Should(Equal(2))
		})

		It("uses the token from the command line when lookup hands out a masked one", func() {
			api.token = "******"
			cfg.Params = agent.ParseCmdline("ipa-api-url=" + api.URL + " ipa-agent-token=preissued")
			a := startAgent(cfg)
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).Should(Equal(1))
			Expect(api.calls(path)[0].Body["agent_token"]).To(Equal("preissued"))
			code, _ := a.command("standby.sync", nil, true, "******")
			Expect(code).To(Equal(http.StatusUnauthorized))
		})

		It("with ipa-enable-auto-tls serves its API over TLS with the certificate its heartbeats report, for its address", func() {
			cfg.Params = agent.ParseCmdline("ipa-api-url=" + api.URL + " ipa-enable-auto-tls=1")
			a, err := agent.New(cfg)
			Expect(err).NotTo(HaveOccurred())
			ctx, cancel := context.WithCancel(context.Background())
			exited := make(chan error, 1)
			go func() { exited <- a.Run(ctx) }()
			DeferCleanup(func() {
				cancel()
				Eventually(exited).WithTimeout(30 * time.Second).Should(Receive(BeNil()))
			})
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).Should(Equal(1))
			hb := api.calls(path)[0]
			Expect(hb.Body["callback_url"]).To(Equal("https://" + cfg.Listen))
			certPEM, _ := hb.Body["agent_verify_ca"].(string)
			block, _ := pem.Decode([]byte(certPEM))
			Expect(block).NotTo(BeNil())
			cert, err := x509.ParseCertificate(block.Bytes)
			Expect(err).NotTo(HaveOccurred())
			Expect(cert.PublicKeyAlgorithm).To(Equal(x509.ECDSA))

			pool := x509.NewCertPool()
			Expect(pool.AppendCertsFromPEM([]byte(certPEM))).To(BeTrue())
			pinned := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
			resp, err := pinned.Get("https://" + cfg.Listen + "/v1/status")
			Expect(err).NotTo(HaveOccurred(), "the served certificate is the reported one, valid for the agent's address")
			Expect(resp.TLS.PeerCertificates[0].Raw).To(Equal(cert.Raw))
			resp.Body.Close()

			resp, err = http.Get("http://" + cfg.Listen + "/v1/status")
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusBadRequest), "plain HTTP is not served")
			_, err = http.Get("https://" + cfg.Listen + "/v1/status")
			Expect(err).To(MatchError(ContainSubstring("certificate")), "a client not trusting the certificate gets nowhere")
		})

		It("heartbeats without agent_verify_ca and serves plain HTTP without auto-TLS", func() {
			startAgent(cfg)
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).Should(Equal(1))
			hb := api.calls(path)[0]
			Expect(hb.Body).NotTo(HaveKey("agent_verify_ca"))
			Expect(hb.Body["callback_url"]).To(Equal("http://" + cfg.Listen))
		})

		It("refuses every command call while it holds no token", func() {
			api.token = "******"
			a := startAgent(cfg)
			path := "/v1/heartbeat/" + api.nodeUUID
			Eventually(func() int { return len(api.calls(path)) }).Should(BeNumerically(">=", 1))
			for _, token := range []string{"", "******"} {
				code, _ := a.command("standby.sync", nil, true, token)
				Expect(code).To(Equal(http.StatusUnauthorized))
				code, _ = call(http.MethodGet, a.base+"/v1/commands", token, nil)
				Expect(code).To(Equal(http.StatusUnauthorized))
			}
			code, _ := call(http.MethodGet, a.base+"/v1/status", "", nil)
			Expect(code).To(Equal(http.StatusOK))
		})
	})

	It("logs the request id the conductor sends with a command, when it has Ironic's form", func() {
		cfg.Log = testLogger()
		logs := logtest.NewLocal(cfg.Log)
		a := startAgent(cfg)
		Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))
		const id = "req-0b6f4a52-1c1e-4d7a-9a43-6f3e1f0c2d11"
		for _, sent := range []string{id, "req-1 level=error"} {
			body := `{"name": "clean.get_clean_steps", "params": {"node": {}, "ports": []}}`
			req, err := http.NewRequest(http.MethodPost, a.base+"/v1/commands?wait=true", bytes.NewReader([]byte(body)))
			Expect(err).NotTo(HaveOccurred())
			req.Header.Set(agent.TokenHeader, api.token)
			req.Header.Set(agent.RequestIDHeader, sent)
			resp, err := http.DefaultClient.Do(req)
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
		}
		var tagged []any
		for _, en := range logs.AllEntries() {
			if en.Message == "Executing command" {
				tagged = append(tagged, en.Data["request_id"])
			}
		}
		Expect(tagged).To(Equal([]any{id, nil}))
	})

	Describe("command API", func() {
		var a *running
		BeforeEach(func() {
			a = startAgent(cfg)
			Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))
		})

		It("requires the agent token in its header on every command call, and shows nothing without it", func() {
			code, res := a.command("standby.sync", nil, true, "")
			Expect(code).To(Equal(http.StatusUnauthorized))
			Expect(res).To(HaveKeyWithValue("type", "Unauthorized"))
			code, _ = a.command("standby.sync", nil, true, "wrong")
			Expect(code).To(Equal(http.StatusUnauthorized))
			code, _ = call(http.MethodPost, a.base+"/v1/commands?wait=true&agent_token="+api.token, "",
				map[string]any{"name": "standby.sync"})
			Expect(code).To(Equal(http.StatusUnauthorized), "a token in the URL is not accepted")
			code, res = a.command("clean.get_clean_steps", map[string]any{"node": map[string]any{"secret": "hunter2"}, "ports": []any{}},
				true, api.token)
			Expect(code).To(Equal(http.StatusOK))
			Expect(res).To(HaveKeyWithValue("command_status", "SUCCEEDED"))
			id := res["id"].(string)

			for _, path := range []string{"/v1/commands", "/v1/commands/", "/v1/commands/" + id, "/v1/commands/" + id + "?wait=true"} {
				for _, token := range []string{"", "wrong"} {
					code, res = call(http.MethodGet, a.base+path, token, nil)
					Expect(code).To(Equal(http.StatusUnauthorized), path)
					Expect(fmt.Sprint(res)).NotTo(ContainSubstring("hunter2"), path)
				}
				code, _ = call(http.MethodGet, a.base+path, api.token, nil)
				Expect(code).To(Equal(http.StatusOK), path)
			}
		})

		It("checksums its disk for the conductor, leaving no command record", func() {
			sums := func(q, token string) (int, map[string]any) {
				return call(http.MethodGet, a.base+"/v1/checksums?"+q, token, nil)
			}
			code, res := sums("offset=65536&length=200000&block_size=65536", "")
			Expect(code).To(Equal(http.StatusUnauthorized))
			Expect(res).To(HaveKeyWithValue("type", "Unauthorized"))
			code, _ = sums("offset=65536&length=200000&block_size=65536&agent_token="+api.token, "")
			Expect(code).To(Equal(http.StatusUnauthorized), "a token in the URL is not accepted")

			code, res = sums("offset=65536&length=200000&block_size=65536", api.token)
			Expect(code).To(Equal(http.StatusOK))
			data := content(disk)
			table := crc32.MakeTable(crc32.Castagnoli)
			var want []any
			for off := 65536; off < 65536+200000; off += 65536 {
				want = append(want, float64(crc32.Checksum(data[off:min(off+65536, 65536+200000)], table)))
			}
			Expect(res).To(HaveKeyWithValue("algorithm", "crc32c"))
			Expect(res).To(HaveKeyWithValue("checksums", want))

			for _, q := range []string{"offset=-1&length=1&block_size=512", "offset=0&length=0&block_size=512",
				"offset=0&length=512&block_size=100", "offset=0&length=x&block_size=512", "length=512&block_size=512",
				fmt.Sprintf("offset=%d&length=1024&block_size=512", 8<<20-512)} {
				code, res = sums(q, api.token)
				Expect(code).To(Equal(http.StatusBadRequest), q)
				Expect(res).To(HaveKeyWithValue("type", "InvalidCommandError"), q)
			}
			_, res = call(http.MethodGet, a.base+"/v1/commands", api.token, nil)
			Expect(res["commands"]).To(BeEmpty())

			By("answering the conductor's client, which never shows the token")
			ctx := context.Background()
			got, err := agent.DiskChecksums{URL: a.base, Token: api.token}.Checksums(ctx, 65536, 200000, 65536)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(len(want)))
			for i := range got {
				Expect(float64(got[i])).To(Equal(want[i]))
			}
			_, err = agent.DiskChecksums{URL: a.base, Token: "wrong-token-xyz"}.Checksums(ctx, 0, 512, 512)
			Expect(err).To(MatchError(ContainSubstring("401")))
			Expect(err.Error()).NotTo(ContainSubstring("wrong-token-xyz"))
			a.stop()
			_, err = agent.DiskChecksums{URL: a.base, Token: "wrong-token-xyz"}.Checksums(ctx, 0, 512, 512)
			Expect(err).To(MatchError(ContainSubstring("did not answer")))
			Expect(err.Error()).NotTo(ContainSubstring("wrong-token-xyz"))
		})

		It("returns results in IPA's shape and lists them in execution order", func() {
			code, res := a.command("clean.get_clean_steps", map[string]any{"node": map[string]any{}, "ports": []any{}},
				true, api.token)
			Expect(code).To(Equal(http.StatusOK))
			Expect(res).To(HaveLen(6))
			Expect(res).To(HaveKeyWithValue("command_name", "get_clean_steps"))
			Expect(res).To(HaveKeyWithValue("command_status", "SUCCEEDED"))
			Expect(res).To(HaveKeyWithValue("command_error", BeNil()))
			Expect(res).To(HaveKeyWithValue("command_params", map[string]any{"node": map[string]any{}, "ports": []any{}}))
			Expect(res["id"]).To(MatchRegexp(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`))
			Expect(res["command_result"]).To(Equal(map[string]any{
				"clean_steps": map[string]any{"FerricHardwareManager": []any{
					map[string]any{"step": "erase_devices", "priority": 10.0, "interface": "deploy",
						"reboot_requested": false, "abortable": true},
					map[string]any{"step": "erase_devices_metadata", "priority": 99.0, "interface": "deploy",
						"reboot_requested": false, "abortable": true},
				}},
				"hardware_manager_version": map[string]any{"ferric_hardware_manager": "1.0"},
			}))
			_, second := a.command("deploy.get_deploy_steps", nil, true, api.token)
			Expect(second["command_result"]).To(HaveKeyWithValue("deploy_steps",
				map[string]any{"FerricHardwareManager": []any{}}))

			code, list := call(http.MethodGet, a.base+"/v1/commands", api.token, nil)
			Expect(code).To(Equal(http.StatusOK))
			Expect(list["commands"]).To(HaveLen(2))
			Expect(list["commands"].([]any)[0]).To(Equal(res))
			code, one := call(http.MethodGet, a.base+"/v1/commands/"+res["id"].(string), api.token, nil)
			Expect(code).To(Equal(http.StatusOK))
			Expect(one).To(Equal(res))
		})

		It("masks secrets in the command parameters it shows", func() {
			node := map[string]any{"uuid": api.nodeUUID, "driver_info": map[string]any{"ipmi_username": "admin",
				"ipmi_password": "s3cret"}}
			_, res := a.command("clean.get_clean_steps", map[string]any{"node": node, "ports": []any{}}, true, api.token)
			Expect(res["command_params"]).To(Equal(map[string]any{"ports": []any{}, "node": map[string]any{
				"uuid": api.nodeUUID, "driver_info": map[string]any{"ipmi_username": "admin", "ipmi_password": "******"}}}))
			_, list := call(http.MethodGet, a.base+"/v1/commands", api.token, nil)
			Expect(fmt.Sprint(list)).NotTo(ContainSubstring("s3cret"))
		})

		It("rejects malformed, unknown and missing commands with IPA's errors", func() {
			code, res := a.command("nodot", nil, true, api.token)
			Expect(code).To(Equal(http.StatusBadRequest))
			Expect(res).To(Equal(map[string]any{"type": "InvalidCommandError", "code": 400.0, "message": "Invalid command",
				"details": "Command name must be of the form <extension>.<name>"}))
			code, res = a.command("nosuch.thing", nil, true, api.token)
			Expect(code).To(Equal(http.StatusNotFound))
			Expect(res).To(HaveKeyWithValue("type", "RequestedObjectNotFoundError"))
			code, res = a.command("clean.nosuch", nil, true, api.token)
			Expect(code).To(Equal(http.StatusBadRequest))
			Expect(res).To(HaveKeyWithValue("details", "Unknown command: clean.nosuch"))
			code, _ = call(http.MethodGet, a.base+"/v1/commands/00000000-0000-4000-8000-000000000000", api.token, nil)
			Expect(code).To(Equal(http.StatusNotFound))
			code, _ = call(http.MethodGet, a.base+"/v1/commands", api.token, nil)
			Expect(code).To(Equal(http.StatusOK))
			code, status := call(http.MethodGet, a.base+"/v1/status", "", nil)
			Expect(code).To(Equal(http.StatusOK))
			Expect(status).To(HaveKeyWithValue("version", agent.Version))
		})

		It("runs one command at a time, answering 409 AgentIsBusy meanwhile", func() {
			g := newGate()
			cfg.EraseHook = g
			a.stop()
			cfg.Listen = freeAddr()
			a = startAgent(cfg)
			Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))

			code, res := a.command("clean.execute_clean_step", map[string]any{
				"step": map[string]any{"step": "erase_devices", "interface": "deploy", "priority": 10},
				"node": map[string]any{"driver_internal_info": map[string]any{
					"agent_erase_devices_iterations": 0, "agent_erase_devices_zeroize": true}}}, false, api.token)
			Expect(code).To(Equal(http.StatusOK))
			Expect(res).To(HaveKeyWithValue("command_status", "RUNNING"))
			Eventually(g.reached).Should(Receive(Equal(disk)))

			code, busy := a.command("standby.sync", nil, true, api.token)
			Expect(code).To(Equal(http.StatusConflict))
			Expect(busy).To(Equal(map[string]any{"type": "AgentIsBusy", "code": 409.0, "message": "Agent is busy",
				"details": "executing command execute_clean_step"}))

			// While it runs, the result shows the step and how far it got.
			_, now := call(http.MethodGet, a.base+"/v1/commands/"+res["id"].(string), api.token, nil)
			Expect(now["command_status"]).To(Equal("RUNNING"))
			progress := now["command_result"].(map[string]any)["progress"].(map[string]any)
			Expect(progress["bytes_done"]).To(Equal(float64(8 << 20)))
			Expect(progress["percent"]).To(Equal(100.0))

			close(g.release)
			Expect(a.finished(res["id"].(string), api.token)["command_status"]).To(Equal("SUCCEEDED"))
			code, _ = a.command("standby.sync", nil, true, api.token)
			Expect(code).To(Equal(http.StatusOK))
		})

		It("erases every disk except the virtual-media floppy and read-only ones, verified", func() {
			floppy := randomDisk(dir, "floppy.img", 1<<20)
			link := filepath.Join(dir, "ir-vfd-dev")
			Expect(os.Symlink(floppy, link)).To(Succeed())
			ro := randomDisk(dir, "ro.img", 1<<20)
			Expect(os.Chmod(ro, 0o444)).To(Succeed())
			second := randomDisk(dir, "sdb.img", 3<<20+512)
			a.stop()
			cfg.Listen, cfg.VirtualMediaDevice = freeAddr(), link
			cfg.Disks = []string{disk, floppy, ro, second}
			a = startAgent(cfg)
			Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))
			floppyBefore, roBefore := content(floppy), content(ro)

			step := map[string]any{"step": "erase_devices", "interface": "deploy", "priority": 10.0,
				"reboot_requested": false, "abortable": true}
			_, res := a.command("clean.execute_clean_step", map[string]any{"step": step,
				"node": map[string]any{"driver_internal_info": map[string]any{"agent_erase_devices_iterations": 1,
					"agent_erase_devices_zeroize": true}},
				"ports": []any{}, "clean_version": map[string]any{"ferric_hardware_manager": "1.0"}}, false, api.token)
			done := a.finished(res["id"].(string), api.token)
			Expect(done["command_status"]).To(Equal("SUCCEEDED"), fmt.Sprint(done["command_error"]))
			result := done["command_result"].(map[string]any)
			Expect(result["clean_step"]).To(Equal(step))
			clean := result["clean_result"].(map[string]any)
			Expect(clean[floppy]).To(Equal(map[string]any{"skipped": "virtual media device"}))
			Expect(clean[ro]).To(Equal(map[string]any{"skipped": "read-only device"}))
			for _, d := range []string{disk, second} {
				Expect(clean[d]).To(And(HaveKeyWithValue("method", "shred"), HaveKeyWithValue("passes", 2.0),
					HaveKeyWithValue("bytes", float64(len(content(d)))), HaveKey("duration"),
					HaveKeyWithValue("samples_checked", BeNumerically(">=", 2.0))))
				Expect(allZero(content(d))).To(BeTrue())
			}
			Expect(content(floppy)).To(Equal(floppyBefore))
			Expect(content(ro)).To(Equal(roBefore))
		})

		It("fails the step when the disk changes between the erase and its verification", func() {
			g := newGate()
			g.damage = func(dev string) error {
				f, err := os.OpenFile(dev, os.O_WRONLY, 0)
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = f.WriteAt([]byte("left behind"), 1000)
				return err
			}
			close(g.release)
			a.stop()
			cfg.Listen, cfg.EraseHook = freeAddr(), g
			a = startAgent(cfg)
			Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))

			_, res := a.command("clean.execute_clean_step", map[string]any{
				"step": map[string]any{"step": "erase_devices", "interface": "deploy"}}, false, api.token)
			done := a.finished(res["id"].(string), api.token)
			Expect(done["command_status"]).To(Equal("FAILED"))
			Expect(done["command_result"]).To(BeNil())
			Expect(done["command_error"]).To(And(HaveKeyWithValue("type", "CleaningError"),
				HaveKeyWithValue("details", ContainSubstring("verification of "+disk+" failed"))))
		})

		It("answers CLEAN_VERSION_MISMATCH to steps chosen from another hardware manager version", func() {
			before := content(disk)
			_, res := a.command("clean.execute_clean_step", map[string]any{
				"step":          map[string]any{"step": "erase_devices", "interface": "deploy"},
				"clean_version": map[string]any{"generic_hardware_manager": "1.1"}}, false, api.token)
			done := a.finished(res["id"].(string), api.token)
			Expect(done["command_status"]).To(Equal("CLEAN_VERSION_MISMATCH"))
			Expect(done["command_error"]).To(HaveKeyWithValue("type", "VersionMismatch"))
			Expect(content(disk)).To(Equal(before))
		})

		It("wipes metadata at both ends of the disk and leaves the middle alone", func() {
			before := content(disk)
			_, res := a.command("clean.execute_clean_step", map[string]any{
				"step": map[string]any{"step": "erase_devices_metadata", "interface": "deploy"}}, false, api.token)
			done := a.finished(res["id"].(string), api.token)
			Expect(done["command_status"]).To(Equal("SUCCEEDED"))
			after := content(disk)
			Expect(allZero(after[:1<<20])).To(BeTrue())
			Expect(allZero(after[len(after)-1<<20:])).To(BeTrue())
			Expect(after[1<<20 : len(after)-1<<20]).To(Equal(before[1<<20 : len(before)-1<<20]))
		})
	})

	It("installs the written image's GRUB with image.install_bootloader, and fails naming the way out for an image without one", func() {
		img := filepath.Join(dir, "root.raw")
		rootUUID, err := grubroot.Image(img, 48<<20, true)
		Expect(err).NotTo(HaveOccurred())
		withGRUB := filepath.Join(dir, "grub.img")
		Expect(grubroot.Disk(withGRUB, 64<<20, img)).To(Succeed())
		cfg.Disks = []string{withGRUB}
		a := startAgent(cfg)
		Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))

		code, res := a.command("image.install_bootloader", map[string]any{"efi_system_part_uuid": nil}, true, api.token)
		Expect(code).To(Equal(http.StatusOK))
		Expect(res["command_status"]).To(Equal("FAILED"))
		Expect(res["command_error"]).To(And(HaveKeyWithValue("type", "InvalidCommandError"),
			HaveKeyWithValue("details", "root_uuid is required")))
		code, res = a.command("image.install_bootloader", map[string]any{"root_uuid": rootUUID, "efi_system_part_uuid": nil}, true, api.token)
		Expect(code).To(Equal(http.StatusOK))
		Expect(res["command_status"]).To(Equal("SUCCEEDED"), fmt.Sprint(res["command_error"]))
		Expect(bytes.Contains(content(withGRUB)[:440], []byte("GRUB"))).To(BeTrue(), "GRUB's boot code is in the MBR")
		a.stop()

		bare := filepath.Join(dir, "bare.raw")
		bareUUID, err := grubroot.Image(bare, 48<<20, false)
		Expect(err).NotTo(HaveOccurred())
		noGRUB := filepath.Join(dir, "nogrub.img")
		Expect(grubroot.Disk(noGRUB, 64<<20, bare)).To(Succeed())
		cfg.Disks, cfg.Listen = []string{noGRUB}, freeAddr()
		a = startAgent(cfg)
		Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))
		code, res = a.command("image.install_bootloader", map[string]any{"root_uuid": bareUUID}, true, api.token)
		Expect(code).To(Equal(http.StatusOK))
		Expect(res["command_status"]).To(Equal("FAILED"))
		Expect(res["command_error"]).To(HaveKeyWithValue("details", And(ContainSubstring("holds no GRUB"),
			ContainSubstring("boot_option=netboot"), ContainSubstring("whole-disk image"))))
		Expect(allZero(content(noGRUB)[:440])).To(BeTrue(), "nothing was written to the MBR")
	})

	It("exports the disk over iSCSI, with CHAP only, for the conductor to write, then powers off and releases it", func() {
		poweredOff := make(chan struct{})
		cfg.PowerOff = func(context.Context) error { close(poweredOff); return nil }
		// The disk's unit serial number page, as sysfs shows a SCSI disk's.
		cfg.SysfsRoot = GinkgoT().TempDir()
		vpd := filepath.Join(cfg.SysfsRoot, "class", "block", filepath.Base(disk), "device")
		Expect(os.MkdirAll(vpd, 0o755)).To(Succeed())
		Expect(os.WriteFile(filepath.Join(vpd, "vpd_pg80"), []byte("\x00\x80\x00\x0e  WD-AGENT0042"), 0o644)).To(Succeed())
		a := startAgent(cfg)
		Eventually(a.NodeUUID).Should(Equal(api.nodeUUID))
		iqn := "iqn.2008-10.org.openstack:" + api.nodeUUID
		port := freePort()
		params := map[string]any{"iqn": iqn, "portal_port": port, "wipe_disk_metadata": true}
		code, res := a.command("iscsi.start_iscsi_target", params, true, api.token)
		Expect(code).To(Equal(http.StatusOK))
		Expect(res["command_status"]).To(Equal("FAILED"), "no export open to every initiator")
		Expect(fmt.Sprint(res["command_error"])).To(ContainSubstring("chap_username and chap_secret are required"))
		const chapSecret = "q7Wm2Zx9Lp4Rt8Vb3Nc6Yk1H"
		params["chap_username"], params["chap_secret"] = "ferric-deploy", chapSecret
		code, res = a.command("iscsi.start_iscsi_target", params, true, api.token)
		Expect(code).To(Equal(http.StatusOK))
		Expect(res["command_status"]).To(Equal("SUCCEEDED"), fmt.Sprint(res["command_error"]))
		Expect(res["command_result"]).To(Equal(map[string]any{"iscsi_target_iqn": iqn}))
		Expect(res["command_params"]).To(HaveKeyWithValue("chap_secret", "******"))
		Expect(allZero(content(disk)[:1<<20])).To(BeTrue())

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		portal := fmt.Sprintf("127.0.0.1:%d", port)
		image := make([]byte, 2<<20)
		_, _ = rand.NewChaCha8([32]byte{9}).Read(image)
		_, err := iscsi.Dial(ctx, portal, iqn, iscsi.Options{})
		Expect(err).To(HaveOccurred(), "an initiator without the account is refused")
		s, err := iscsi.Dial(ctx, portal, iqn, iscsi.Options{CHAPUser: "ferric-deploy", CHAPSecret: chapSecret})
		Expect(err).NotTo(HaveOccurred())
		lun, err := s.OpenLUN(ctx, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(lun.Size()).To(Equal(int64(8 << 20)))
		id, err := lun.Identity(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(id.Serial).To(Equal("WD-AGENT0042"), "the LUN reports the disk's serial number, for the conductor to check")
		_, err = lun.CopyFrom(ctx, 0, bytes.NewReader(image))
		Expect(err).NotTo(HaveOccurred())
		Expect(lun.Sync(ctx)).To(Succeed())
		Expect(s.Close()).To(Succeed())
		Expect(content(disk)[:len(image)]).To(Equal(image))

		// Idempotent: the same call again keeps the export and does not wipe again.
		code, res = a.command("iscsi.start_iscsi_target", params, true, api.token)
		Expect(code).To(Equal(http.StatusOK))
		Expect(res["command_status"]).To(Equal("SUCCEEDED"))
		Expect(content(disk)[:len(image)]).To(Equal(image))

		_, res = a.command("standby.power_off", nil, false, api.token)
		Expect(res["command_status"]).To(Equal("RUNNING"))
		Eventually(poweredOff).Should(BeClosed())
		Eventually(a.exited).Should(BeClosed())
		Expect(a.err).NotTo(HaveOccurred())
		_, err = iscsi.Discover(ctx, portal, iscsi.Options{})
		Expect(err).To(HaveOccurred())
		Expect(filepath.Join("/var/run/tgtd", fmt.Sprintf("socket.%d", cfg.TgtdControlPort))).NotTo(BeAnExistingFile())
	})
})
