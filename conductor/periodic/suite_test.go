package periodic_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestPeriodic(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "periodic suite")
}
