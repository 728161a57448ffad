package deployiso_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestDeployISO(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "The lab's cached deploy ISO")
}
