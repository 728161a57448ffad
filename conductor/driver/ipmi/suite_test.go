package ipmi_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestIPMI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "IPMI Driver Suite")
}
