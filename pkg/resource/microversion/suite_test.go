package microversion_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestMicroversion(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "microversion")
}
