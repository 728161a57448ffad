package conventions_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// source is one parsed Go file of the repository.
type source struct {
	// path is relative to the repository root.
	path string
	file *ast.File
	fset *token.FileSet
}

// main tells whether the file belongs to a main package.
func (s source) main() bool { return s.file.Name.Name == "main" }

// testCode tells whether the file is test code, which may read its
// settings from the environment: a _test.go file, a fixture package
// (dbtest, rpctest, ...) or the tests module, which holds only suites,
// their harness and the benchmarks.
func (s source) testCode() bool {
	return strings.HasSuffix(s.path, "_test.go") || strings.HasSuffix(s.file.Name.Name, "test") ||
		strings.HasPrefix(s.path, "tests"+string(filepath.Separator))
}

func (s source) at(pos token.Pos) string {
	p := s.fset.Position(pos)
	return s.path + ":" + strconv.Itoa(p.Line)
}

// importName is the name the file uses for the package of path, "" when it
// does not import it.
func (s source) importName(path string) string {
	for _, im := range s.file.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == path {
			if im.Name != nil {
				return im.Name.Name
			}
			return filepath.Base(path)
		}
	}
	return ""
}

// uses lists where the file uses pkg.name for a name in names.
func (s source) uses(pkgPath string, names map[string]bool) []string {
	local := s.importName(pkgPath)
	if local == "" || local == "_" {
		return nil
	}
	var at []string
	ast.Inspect(s.file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && names[sel.Sel.Name] {
			at = append(at, s.at(sel.Pos())+" "+local+"."+sel.Sel.Name)
		}
		return true
	})
	return at
}

// repoRoot is the directory holding go.work, above this package.
func repoRoot() string {
	GinkgoHelper()
	dir, err := os.Getwd()
	Expect(err).NotTo(HaveOccurred())
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		Expect(parent).NotTo(Equal(dir), "no go.work above the conventions spec")
		dir = parent
	}
}

// sources parses every Go file of the repository's modules.
func sources() []source {
	GinkgoHelper()
	root := repoRoot()
	var out []source
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out = append(out, source{path: rel, file: f, fset: fset})
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
	return out
}

// globalLogger is logrus's package-level functions, which log through or
// change the process-wide logger.
func globalLogger() map[string]bool {
	names := map[string]bool{"StandardLogger": true, "SetOutput": true, "SetFormatter": true,
		"SetLevel": true, "SetReportCaller": true, "AddHook": true, "WithField": true, "WithFields": true,
		"WithError": true, "WithContext": true, "WithTime": true, "Exit": true}
	for _, level := range []string{"Trace", "Debug", "Info", "Print", "Warn", "Warning", "Error", "Fatal", "Panic"} {
		for _, suffix := range []string{"", "f", "ln", "Fn"} {
			names[level+suffix] = true
		}
	}
	return names
}

var _ = Describe("The module sources", Ordered, ContinueOnFailure, func() {
	var all []source

	BeforeAll(func() {
		all = sources()
		Expect(len(all)).To(BeNumerically(">", 100), "the walk found the modules' sources")
	})

	It("have no init function: what a package sets up, its constructor does", func() {
		var found []string
		for _, s := range all {
			for _, d := range s.file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
					found = append(found, s.at(fn.Pos()))
				}
			}
		}
		Expect(found).To(BeEmpty())
	})

	It("log through the logger they are given, never logrus's process-wide one, outside main", func() {
		names := globalLogger()
		var found []string
		for _, s := range all {
			if !s.main() {
				found = append(found, s.uses("github.com/sirupsen/logrus", names)...)
			}
		}
		Expect(found).To(BeEmpty())
	})

	It("read environment variables only in main packages and test code", func() {
		names := map[string]bool{"Getenv": true, "LookupEnv": true}
		var found []string
		for _, s := range all {
			if !s.main() && !s.testCode() {
				found = append(found, s.uses("os", names)...)
			}
		}
		Expect(found).To(BeEmpty())
	})
})
