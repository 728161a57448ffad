package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Binaries are the commands the harness builds, by name.
var Binaries = []string{"ferric", "ferric-api", "ferric-conductor"}

// RepoRoot walks up from the working directory to the directory holding
// go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.work not found above the working directory")
		}
		dir = parent
	}
}

// Build compiles the Ferric binaries into dir (go build's cache keeps
// repeated builds cheap) and returns dir.
func Build(dir string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	args := []string{"build", "-o", dir + string(os.PathSeparator)}
	for _, b := range Binaries {
		args = append(args, "./"+b)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join(root, "cmd")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build the ferric binaries: %w\n%s", err, out)
	}
	return dir, nil
}
