package pxe_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestPXE(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "pxe boot interface suite")
}
