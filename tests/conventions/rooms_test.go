package conventions_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// grabBagNames say nothing of what a file holds; a file is named for its
// domain (traits, rescue, negotiate) instead.
var grabBagNames = map[string]bool{"helpers": true, "helper": true, "utils": true, "util": true,
	"common": true, "misc": true, "extras": true, "extensions": true, "features": true,
	"node_features": true, "middleware": true, "stuff": true}

var _ = Describe("The repository's rooms", func() {
	It("name no Go file for a grab-bag or a milestone", func() {
		var found []string
		for _, s := range sources() {
			name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(s.path), ".go"), "_test")
			// The driver package's optional interfaces extend the required
			// ones: its extensions.go is that room, not a grab-bag.
			if grabBagNames[name] && filepath.Dir(s.path) != filepath.Join("conductor", "driver") {
				found = append(found, s.path)
			}
		}
		Expect(found).To(BeEmpty())
	})

	It("list every document of docs/ in its index, and the index links nothing missing", func() {
		docs := filepath.Join(repoRoot(), "docs")
		index, err := os.ReadFile(filepath.Join(docs, "README.md"))
		Expect(err).NotTo(HaveOccurred())
		linked := map[string]bool{}
		for _, m := range regexp.MustCompile(`\]\(([^)#]+\.md)\)`).FindAllStringSubmatch(string(index), -1) {
			linked[m[1]] = true
			Expect(filepath.Join(docs, m[1])).To(BeAnExistingFile(), "docs/README.md links %s", m[1])
		}
		entries, err := os.ReadDir(docs)
		Expect(err).NotTo(HaveOccurred())
		var missing []string
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".md") && e.Name() != "README.md" && !linked[e.Name()] {
				missing = append(missing, e.Name())
			}
		}
		Expect(missing).To(BeEmpty(), "documents docs/README.md does not list")
	})
})
