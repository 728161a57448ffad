package erase_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestErase(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "erase Suite")
}
