package iscsideploy

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestISCSIDeploy(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iscsi deploy interface suite")
}
