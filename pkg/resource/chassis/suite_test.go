package chassis_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

func TestChassis(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "chassis")
}
