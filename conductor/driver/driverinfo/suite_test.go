package driverinfo_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDriverInfo(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "driver_info helpers suite")
}
