package authtoken_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestAuthtoken(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "authtoken")
}
