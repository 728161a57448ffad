package nextlink_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestNextlink(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "nextlink suite")
}
