// The runtime's own CRDs, read from github.com/servicebinding/runtime v1.0.0 in the Go module
// cache (internal/modulefiles: its dependency graph includes modules the Go module proxy refuses,
// so it is no requirement in go.mod).

package servicebinding

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/modulefiles"
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
	return modulefiles.Module{Path: RuntimeModule, Version: RuntimeVersion, Sum: RuntimeSum}.Dir()
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
