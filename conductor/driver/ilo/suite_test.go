package ilo_test

import (
	"net/netip"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/deploy/image"
)

func TestILO(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "iLO and Redfish driver suite")
}

// loopbackDownloads lets the boot interfaces fetch the kernels and
// ramdisks the specs serve from 127.0.0.1.
var loopbackDownloads = image.Destinations{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
