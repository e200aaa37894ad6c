// The story of restage-gate told on a real control plane: kube-apiserver, etcd, the workload
// controllers and the scheduler of the pinned release, the node agent, the binding runtime's
// projector and Kubewarden's stand-in serving the compiled module. One control plane serves the
// whole run of the package; each test works in namespaces of its own, and tests that install a
// different set of policies run one setup at a time. `make test-control-plane` runs the package
// twice at once (the Makefile's SCENARIOS_APART).
//
// The binaries come from the environment (`make test-control-plane` sets them):
// CONTROL_PLANE (this module's cmd/control-plane), RESTAGE_GATE_WEBHOOK (the project's policy
// server stand-in) and RESTAGE_GATE_WASM (the module); POLICY_SERVER, when set, is a real
// policy-server that serves the module instead.
package scenarios

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/internal/cluster"
)

// env is the control plane of the run.
var env struct {
	cluster *cluster.Cluster
	client  kubernetes.Interface
	dynamic dynamic.Interface
	// repo is the top of the repository: the manifests users apply are read from there.
	repo string
	// kubectl is kubectl of the pinned release.
	kubectl string
}

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	required := map[string]string{}
	for _, name := range []string{"CONTROL_PLANE", "RESTAGE_GATE_WEBHOOK", "RESTAGE_GATE_WASM"} {
		required[name] = os.Getenv(name)
		if required[name] == "" {
			fmt.Fprintf(os.Stderr, "%s is not set: run these tests with `make test-control-plane`\n", name)
			return 1
		}
	}
	repo, err := filepath.Abs("../../..")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "restage-gate-control-plane-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	controller := []string{"kubewarden-controller", "--dir", dir,
		"--wasm", required["RESTAGE_GATE_WASM"], "--webhook-server", required["RESTAGE_GATE_WEBHOOK"]}
	if ps := os.Getenv("POLICY_SERVER"); ps != "" {
		controller = append(controller, "--policy-server", ps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{
		Dir:    dir,
		Binary: required["CONTROL_PLANE"],
		Nodes:  3,
		Components: []cluster.Component{
			{Name: "kubewarden-controller", Args: controller},
			{Name: "servicebinding-webhook", Args: []string{"servicebinding", "--part", "webhook", "--dir", dir}},
			{Name: "servicebinding-controller", Args: []string{"servicebinding", "--part", "controller", "--dir", dir}},
			{Name: "argo-rollouts", Args: []string{"argo-rollouts"}},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if os.Getenv("KEEP_CONTROL_PLANE_LOGS") == "" {
			_ = os.RemoveAll(dir)
		}
		return 1
	}
	code := 1
	defer func() {
		c.Stop()
		if code == 0 && os.Getenv("KEEP_CONTROL_PLANE_LOGS") == "" {
			_ = os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "control plane logs kept in %s\n", filepath.Join(dir, "logs"))
		}
	}()
	config, err := c.RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.cluster = c
	env.client = kubernetes.NewForConfigOrDie(config)
	env.dynamic = dynamic.NewForConfigOrDie(config)
	env.repo = repo
	env.kubectl = filepath.Join(dir, "bin", "kubectl")
	if err := os.Symlink(required["CONTROL_PLANE"], env.kubectl); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// The components install their resources as they start: wait until they are there.
	resources := []string{"crd/clusteradmissionpolicies.policies.kubewarden.io", "crd/servicebindings.servicebinding.io",
		"crd/rollouts.argoproj.io", "mutatingwebhookconfiguration/servicebinding-admission-projector"}
	if err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) {
		_, err := kubectl(append([]string{"get"}, resources...)...)
		return err == nil, nil
	}); err != nil {
		out, _ := kubectl(append([]string{"get"}, resources...)...)
		fmt.Fprintf(os.Stderr, "the control plane's components never installed their resources: %s\n", out)
		if err := c.Exited(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		return code
	}
	if out, err := kubectl(append([]string{"wait", "--for=condition=established", "--timeout=2m"}, resources[:3]...)...); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n%s", err, out)
		return code
	}
	if err := createCanary(); err != nil {
		fmt.Fprintf(os.Stderr, "creating the canary: %v\n", err)
		return code
	}
	code = m.Run()
	return code
}
