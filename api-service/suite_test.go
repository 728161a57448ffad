package apiservice_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestAPIService(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "api-service")
}
