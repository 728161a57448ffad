package apiservice_test

import (
	"os/exec"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const module = "github.com/ferricbm/ferric/"

// deps lists the packages the given ones load, as the go.work workspace
// resolves them.
func deps(pkgs ...string) []string {
	GinkgoHelper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s", out)
	return strings.Fields(string(out))
}

var _ = Describe("the API service's dependencies", func() {
	It("load no conductor or deploy code: the API learns what conductors offer from the database", func() {
		list := deps(".")
		for _, dep := range list {
			Expect(dep).NotTo(HavePrefix(module + "conductor"))
			Expect(dep).NotTo(HavePrefix(module + "deploy"))
		}
		Expect(list).To(ContainElement(module + "pkg/hwcatalog"))
	})

	It("are not loaded by the conductor and the modules below it: they share the resource rules through pkg/resource", func() {
		var below []string
		for _, m := range []string{"conductor", "deploy", "db", "rpc", "pkg"} {
			below = append(below, module+m+"/...")
		}
		list := deps(below...)
		for _, dep := range list {
			Expect(dep).NotTo(HavePrefix(module+"api-service"), "a package below the API service loads %s", dep)
		}
		Expect(list).To(ContainElement(module + "pkg/resource/nodes"))
	})
})
