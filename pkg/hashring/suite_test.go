package hashring_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestHashring(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Hashring Suite")
}
