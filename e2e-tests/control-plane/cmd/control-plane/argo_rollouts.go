// `argo-rollouts`: the Rollout kind on the control plane, its CRD as Argo Rollouts ships it
// (read from its module), so a Rollout can be created, bound and held. Its controller is not run:
// the module pins another k8s.io release (its own replace lines), and the harness keeps one, so
// nothing rolls a Rollout's pods here; the simulation runs that kind.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/modulefiles"
)

// argoRollouts is the release whose CRD is applied.
var argoRollouts = modulefiles.Module{
	Path:    "github.com/argoproj/argo-rollouts",
	Version: "v1.10.1",
	Sum:     "h1:6oyVPGiHHxu3ixkT6mngemh88HLPDoTX1IwO6KNR1Y4=",
}

func runArgoRollouts(args []string) error {
	c := newComponent("argo-rollouts")
	config, ctx, stop, err := c.start(args)
	if err != nil {
		return err
	}
	defer stop()
	dir, err := argoRollouts.Dir()
	if err != nil {
		return err
	}
	file := filepath.Join(dir, "manifests", "crds", "rollout-crd.yaml")
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	if err := installCRDs(ctx, config, crd); err != nil {
		return err
	}
	// A component runs until the control plane stops.
	<-ctx.Done()
	return nil
}
