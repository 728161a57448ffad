package hwcatalog_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestHWCatalog(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "hwcatalog")
}
