package drivertest_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDrivertest(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "drivertest suite")
}
