// The runtime's own CRDs, read from github.com/servicebinding/runtime v1.0.0 in the Go module
// cache. The module is not a requirement in go.mod: its dependency graph includes modules the Go
// module proxy refuses, which would break `go list -m all` and `go mod tidy` for the whole
// harness, and none of its packages are imported. It is found or fetched on its own instead.

package servicebinding

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Which runtime release the harness stands in for.
const (
	RuntimeModule  = "github.com/servicebinding/runtime"
	RuntimeVersion = "v1.0.0"
	// RuntimeSum is the module's checksum in the Go checksum database, so a CRD never comes from
	// another copy.
	RuntimeSum = "h1:WWK7JQGOLna/hdLLLxyvhVEaH+hCz3t2qPo0oeBM4Fc="
	// RuntimeDirEnv names a directory holding the runtime's source, used instead of the module
	// cache when set.
	RuntimeDirEnv = "SERVICEBINDING_RUNTIME_DIR"
)

// crdDir is where the runtime keeps its generated CRDs.
const crdDir = "config/crd/bases"

// RuntimeDir is the directory of the runtime's source: $SERVICEBINDING_RUNTIME_DIR, or the module
// cache entry that `go mod download` verifies (and fetches when missing).
func RuntimeDir() (string, error) {
	if dir := os.Getenv(RuntimeDirEnv); dir != "" {
		return dir, nil
	}
	// outside any module, so the harness's go.mod is neither read nor changed
	outside, err := os.MkdirTemp("", "servicebinding-runtime-")
	if err != nil {
		return "", err
	}
	defer func() { _ = os.RemoveAll(outside) }()
	cmd := exec.Command("go", "mod", "download", "-json", RuntimeModule+"@"+RuntimeVersion)
	cmd.Dir = outside
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GO111MODULE=on", "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, exec.ErrNotFound) {
		// no go command: the module cache may still hold the release
		return cachedRuntimeDir()
	}
	if err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %v: %s", RuntimeModule, RuntimeVersion, err, strings.TrimSpace(stderr.String()))
	}
	var info struct {
		Dir   string
		Sum   string
		Error string
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("go mod download %s@%s: %w", RuntimeModule, RuntimeVersion, err)
	}
	if info.Error != "" {
		return "", fmt.Errorf("go mod download %s@%s: %s", RuntimeModule, RuntimeVersion, info.Error)
	}
	if info.Sum != RuntimeSum {
		return "", fmt.Errorf("%s@%s has checksum %s, want %s", RuntimeModule, RuntimeVersion, info.Sum, RuntimeSum)
	}
	return info.Dir, nil
}

// cachedRuntimeDir is the release in the default module cache, unverified.
func cachedRuntimeDir() (string, error) {
	cache := os.Getenv("GOMODCACHE")
	if cache == "" {
		gopath := filepath.SplitList(os.Getenv("GOPATH"))
		if len(gopath) > 0 && gopath[0] != "" {
			cache = filepath.Join(gopath[0], "pkg", "mod")
		} else if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, "go", "pkg", "mod")
		}
	}
	dir := filepath.Join(cache, RuntimeModule+"@"+RuntimeVersion)
	if _, err := os.Stat(filepath.Join(dir, crdDir)); err != nil {
		return "", fmt.Errorf("no go command to fetch %s@%s, and not in the module cache: %w", RuntimeModule, RuntimeVersion, err)
	}
	return dir, nil
}

// CRDs loads ServiceBinding and ClusterWorkloadResourceMapping as the runtime ships them.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := RuntimeDir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, crdDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s", filepath.Join(dir, crdDir))
	}
	sort.Strings(files)
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		if crd.Kind != "CustomResourceDefinition" || crd.Spec.Group != Group {
			return nil, fmt.Errorf("%s: not a %s CustomResourceDefinition", f, Group)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
