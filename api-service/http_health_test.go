package apiservice_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/ferricbm/ferric/api-service/apitest"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/bcrypt"

	apiservice "github.com/ferricbm/ferric/api-service"
	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/pkg/config"
	"github.com/ferricbm/ferric/pkg/logging"
	"github.com/ferricbm/ferric/rpc"
	"github.com/ferricbm/ferric/rpc/rpctest"
)

var _ = Describe("health probes", func() {
	// probe starts an API over store and transport (closed afterwards by
	// the caller's cleanups) and GETs path without credentials.
	probe := func(store *db.Store, transport rpc.Transport, path string) (int, map[string]any) {
		cfg := config.Defaults()
		cfg.Default.AuthStrategy = "http_basic"
		// With credentials required, the probes must still pass without.
		hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
		Expect(err).NotTo(HaveOccurred())
		cfg.API.HTTPBasicAuthUserFile = filepath.Join(GinkgoT().TempDir(), "htpasswd")
		Expect(os.WriteFile(cfg.API.HTTPBasicAuthUserFile, []byte("operator:"+string(hash)+"\n"), 0o600)).To(Succeed())
		api, err := apiservice.New(apiservice.Options{Config: cfg, Store: store,
			RPC: rpc.NewClient(transport, 10*time.Second), Log: logging.Discard()})
		Expect(err).NotTo(HaveOccurred())
		srv := httptest.NewServer(api.Handler())
		DeferCleanup(srv.Close)
		resp, err := http.Get(srv.URL + path)
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		Expect(err).NotTo(HaveOccurred())
		var doc map[string]any
		Expect(json.Unmarshal(raw, &doc)).To(Succeed(), string(raw))
		return resp.StatusCode, doc
	}
	openStore := func() *db.Store {
		store, err := db.Open(context.Background(), apitest.SQLite(GinkgoT()))
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(store.Close)
		return store
	}
	amqp := func() rpc.Transport {
		t, err := rpc.NewAMQP(rpctest.AMQPURL(), logging.Discard())
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(t.Close)
		return t
	}

	It("answers liveness without credentials", func() {
		code, doc := probe(openStore(), rpc.NewInProcess(), "/healthz/live")
		Expect(code).To(Equal(http.StatusOK))
		Expect(doc).To(HaveKeyWithValue("status", "ok"))
	})

	It("is ready when the database and the broker answer", func() {
		code, doc := probe(openStore(), amqp(), "/healthz/ready")
		Expect(code).To(Equal(http.StatusOK))
		Expect(doc["checks"]).To(Equal(map[string]any{"database": "ok", "rpc": "ok"}))
	})

	It("is not ready when the broker connection is gone", func() {
		t := amqp()
		Expect(t.Close()).To(Succeed())
		code, doc := probe(openStore(), t, "/healthz/ready")
		Expect(code).To(Equal(http.StatusServiceUnavailable))
		Expect(doc["checks"]).To(Equal(map[string]any{"database": "ok", "rpc": "unreachable"}))
	})

	It("is not ready when the database is gone, and stays live", func() {
		store := openStore()
		Expect(store.Close()).To(Succeed())
		code, doc := probe(store, rpc.NewInProcess(), "/healthz/ready")
		Expect(code).To(Equal(http.StatusServiceUnavailable))
		Expect(doc["checks"]).To(HaveKeyWithValue("database", "unreachable"))
		code, _ = probe(store, rpc.NewInProcess(), "/healthz/live")
		Expect(code).To(Equal(http.StatusOK))
	})
})
