package ribcl_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestRIBCL(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "RIBCL Client Suite")
}
