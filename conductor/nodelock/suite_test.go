package nodelock_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/db"
	"github.com/ferricbm/ferric/db/dbtest"
)

func TestNodelock(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "nodelock suite")
}

var store *db.Store

var _ = BeforeSuite(func(ctx SpecContext) {
	var err error
	store, err = db.Open(ctx, dbtest.SQLiteURL(GinkgoT().TempDir()))
	Expect(err).NotTo(HaveOccurred())
	Expect(store.Upgrade(ctx)).To(Succeed())
	DeferCleanup(store.Close)
})
