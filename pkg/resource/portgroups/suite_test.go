package portgroups_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestPortgroups(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "portgroups")
}
