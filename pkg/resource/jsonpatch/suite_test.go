package jsonpatch_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestJSONPatch(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "jsonpatch")
}
