package publish_test

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/ferricbm/ferric/pkg/config"
)

func TestPublish(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "vmedia publish suite")
}

// The account scripts/swift-aio.sh creates.
const (
	swiftUser = "test:tester"
	swiftKey  = "testing"
)

var (
	swiftOnce sync.Once
	swiftAuth string
	swiftErr  error
)

// swiftAIO starts the Swift all-in-one when it is not answering (the script
// is idempotent and quick when it is) and returns its v1 auth URL.
func swiftAIO() (string, error) {
	swiftOnce.Do(func() {
		// Specs run in their package's directory.
		script := filepath.Join("..", "..", "..", "scripts", "swift-aio.sh")
		var stderr bytes.Buffer
		cmd := exec.Command(script)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			swiftErr = fmt.Errorf("%s: %w: %s", script, err, stderr.String())
			return
		}
		swiftAuth = strings.TrimSpace(string(out))
	})
	return swiftAuth, swiftErr
}

func swiftConfig() config.Swift {
	auth, err := swiftAIO()
	Expect(err).NotTo(HaveOccurred())
	return config.Swift{AuthType: "tempauth", AuthURL: auth, Username: swiftUser, Password: swiftKey}
}

// randomBytes is a medium's content; random so a test cannot pass on
// bytes left by another.
func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

func uniqueName(prefix string) string {
	return fmt.Sprintf("%s-%x", prefix, randomBytes(6))
}
