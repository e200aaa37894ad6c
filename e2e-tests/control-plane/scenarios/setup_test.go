// The setups of the README, installed as a user installs them: `kubectl apply` of the shipped
// ClusterAdmissionPolicy files, then the README's `kubectl wait` until each is active.
package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// install makes the cluster's ClusterAdmissionPolicies exactly those of the files (paths from
// the top of the repository, or documents written by the test) and waits until each is active.
// Top-level tests run one after another, so each has its setup to itself; their subtests run
// side by side within it.
func install(t *testing.T, files ...string) {
	t.Helper()
	if out, err := kubectl("delete", "clusteradmissionpolicies", "--all", "--wait=true"); err != nil {
		t.Fatalf("removing the previous setup: %v\n%s", err, out)
	}
	var names []string
	args := []string{"apply"}
	for _, f := range files {
		args = append(args, "-f", f)
		names = append(names, policyNames(t, f)...)
	}
	if out, err := kubectl(args...); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	wait := []string{"wait", "--for=jsonpath={.status.policyStatus}=active"}
	for _, n := range names {
		wait = append(wait, "clusteradmissionpolicy/"+n)
	}
	if out, err := kubectl(append(wait, "--timeout=3m")...); err != nil {
		t.Fatalf("the policies never became active: %v\n%s", err, out)
	}
	for _, n := range names {
		waitCalled(t, "clusterwide-"+n, canaryNamespace, canary)
	}
}

// The canary is a workload every setup's policies match, written by install's probes only.
const (
	canaryNamespace = "restage-gate-canary"
	canary          = "deployment/canary"
)

// createCanary makes the canary: a Deployment of no pods.
func createCanary() error {
	if out, err := kubectl("create", "namespace", canaryNamespace); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	if out, err := kubectl("-n", canaryNamespace, "create", "deployment", "canary", "--image=registry.example.com/canary:1", "--replicas=0"); err != nil {
		return fmt.Errorf("%v: %s", err, out)
	}
	return nil
}

// waitCalled waits until the API server calls the policy's webhook for writes to `target` in
// `namespace`: it reads webhook configurations and namespaces' labels through watches, so a
// policy marked active may not be called for a moment. Each probe is a server-side dry run,
// which the policy server logs.
func waitCalled(t *testing.T, policyID, namespace, target string) {
	t.Helper()
	if os.Getenv("POLICY_SERVER") != "" {
		// A real policy-server logs in its own format: give the watch time instead.
		time.Sleep(3 * time.Second)
		return
	}
	log := filepath.Join(env.cluster.Dir, "policy-server", "server.log")
	calls := func() int {
		text, _ := os.ReadFile(log)
		n := 0
		for _, line := range strings.Split(string(text), "\n") {
			if strings.Contains(line, "policy="+policyID+" ") && strings.Contains(line, "namespace="+namespace+" ") {
				n++
			}
		}
		return n
	}
	for probe := 0; probe < 60; probe++ {
		before := calls()
		if out, err := kubectl("-n", namespace, "annotate", "--dry-run=server", target, fmt.Sprintf("restage-gate.test/probe=%d", probe), "--overwrite"); err != nil {
			t.Fatalf("probing %s: %v\n%s", policyID, err, out)
		}
		if calls() > before {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("the API server never called %s for %s", policyID, namespace)
}

// policyNames lists the ClusterAdmissionPolicies a file declares.
func policyNames(t *testing.T, file string) []string {
	t.Helper()
	path := file
	if !filepath.IsAbs(path) {
		path = filepath.Join(env.repo, file)
	}
	var names []string
	for _, obj := range renderedKinds(t, path) {
		if name, ok := strings.CutPrefix(obj, "ClusterAdmissionPolicy/"); ok {
			names = append(names, name)
		}
	}
	return names
}

// policyWithSettings writes a copy of a shipped policy file with its settings replaced, for
// setups the README describes as edits of it (a maintenance window, reject mode).
func policyWithSettings(t *testing.T, file string, edit func(policy map[string]any)) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(env.repo, file))
	if err != nil {
		t.Fatal(err)
	}
	var policy map[string]any
	if err := yaml.Unmarshal(text, &policy); err != nil {
		t.Fatal(err)
	}
	edit(policy)
	out, err := yaml.Marshal(policy)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "policy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
