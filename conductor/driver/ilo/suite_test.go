package ilo_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestILO(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iLO and Redfish driver suite")
}
