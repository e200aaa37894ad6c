// Package modulefiles finds the files of a Go module the harness needs as files, not as code
// (CRDs a project ships beside its source): the module cache entry `go mod download` verifies
// against a pinned checksum, fetched through the module proxy when missing. Such a module is not
// a requirement in go.mod: its own dependency graph may hold modules the proxy refuses, or pin
// another k8s.io release.
package modulefiles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Module is one pinned release.
type Module struct {
	Path    string
	Version string
	// Sum is the module's checksum in the Go checksum database, so no file comes from another
	// copy.
	Sum string
}

// Dir is the module's directory: `go mod download` run outside any module, so the harness's
// go.mod is neither read nor changed; without a go command, the default module cache's entry,
// unverified.
func (m Module) Dir() (string, error) {
	outside, err := os.MkdirTemp("", "modulefiles-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(outside) }()
	cmd := exec.Command("go", "mod", "download", "-json", m.Path+"@"+m.Version)
	cmd.Dir = outside
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrNotFound) {
		return m.cached()
	}
	var info struct {
		Dir   string
		Sum   string
		Error string
	}
	if jsonErr := json.Unmarshal(out, &info); jsonErr != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", m.Path, m.Version, err, strings.TrimSpace(stderr.String()))
	}
	if info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", m.Path, m.Version, info.Error)
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", m.Path, m.Version, err, strings.TrimSpace(stderr.String()))
	}
	if info.Sum != m.Sum {
		return "", fmt.Errorf("%s@%s has checksum %s, want %s", m.Path, m.Version, info.Sum, m.Sum)
	}
	return info.Dir, nil
}

func (m Module) cached() (string, error) {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := filepath.SplitList(os.Getenv("GOPATH"))
		if len(gopath) > 0 && gopath[0] != "" {
			cache = filepath.Join(gopath[0], "pkg", "mod")
		} else if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	dir := filepath.Join(cache, m.Path+"@"+m.Version)
	if _, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("no go command to fetch %s@%s, and not in the module cache: %w", m.Path, m.Version, err)
	}
	return dir, nil
}
