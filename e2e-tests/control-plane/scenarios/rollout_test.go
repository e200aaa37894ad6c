// The Rollout kind as far as this control plane goes: Argo Rollouts' CRD is served, its
// controller is not run (cmd/control-plane/argo_rollouts.go says why), so the scenario writes the
// status a fully promoted canary has, as the controller would, and a bind through the real
// projector and API server is held with spec.paused, and released by the README's own line. What
// its controller then does with the pods is the simulation's.
package scenarios

import (
	"context"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

var rolloutKind = kind{
	Kind: "Rollout", Group: "argoproj.io", Version: "v1alpha1", Resource: "rollouts",
	Fixture: "e2e-tests/fixtures/workloads/rollout-unbound.json", Pods: 3,
	Control: []string{"spec", "paused"}, Held: true,
}

func TestRolloutBindIsHeldOnTheRealAPIServer(t *testing.T) {
	install(t, "policy.yaml")
	ctx := context.Background()
	ns := newNamespace(t, "rg-rollout-")
	rollouts := env.dynamic.Resource(rolloutKind.gvr()).Namespace(ns)
	fixture := &unstructured.Unstructured{Object: readJSON(t, rolloutKind.Fixture)}
	status := fixture.Object["status"]
	rollout := rolloutKind.fixture(t)
	rollout.SetNamespace(ns)
	created, err := rollouts.Create(ctx, rollout, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The controller's status of a fully promoted canary, for the generation just created.
	created.Object["status"] = status
	// Argo Rollouts writes observedGeneration as a string.
	_ = unstructured.SetNestedField(created.Object, strconv.FormatInt(created.GetGeneration(), 10), "status", "observedGeneration")
	if _, err := rollouts.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a := &app{t: t, kind: rolloutKind, namespace: ns, name: created.GetName()}
	a.bind("orders-db")
	a.mustBeHeldWith("+orders-db")

	// The README's apply-now line for a Rollout, as written: restage-gate takes the unpause as
	// the release and removes its markers; the rollout that follows is the controller's.
	d := newDocSteps(t)
	mustRunShell(t, forApp(d.command(t, "README.md", rolloutApplyNow), a))
	if a.held() {
		t.Fatalf("still held after the README's release: %s", describe(a))
	}
	if m := markers(a); len(m) > 0 {
		t.Fatalf("released, and still marked %v", m)
	}
	if paused, _, _ := unstructured.NestedBool(a.object().Object, "spec", "paused"); paused {
		t.Fatalf("released, and still paused: %s", describe(a))
	}
}

// rolloutApplyNow is the README's apply-now line for a Rollout.
const rolloutApplyNow = "kubectl patch rollout/NAME …"

// newNamespace creates a namespace for a test that makes no app, deleted when the test passes.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	created, err := env.client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			_ = env.client.CoreV1().Namespaces().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
		}
	})
	return created.Name
}
