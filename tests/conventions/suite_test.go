package conventions_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestConventions(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "conventions suite")
}
