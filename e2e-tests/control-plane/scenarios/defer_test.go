// The defer policy alone (policy.yaml, the README's install): binds are held, the owner's
// restart, restage-gate.io/release=now and the owner's own changes roll, each once. The
// scenarios named as the simulation names them must give the simulation's row.
package scenarios

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The user-provided service of the Korifi reference objects: its binding is named by its guid.
const upsi = "d41d8cd9-8f00-4b20-9e80-0998ecf8427e"

type scenario struct {
	name string
	// kinds it runs on; nil: every kind.
	kinds func(kind) bool
	run   func(t *testing.T, k kind) row
}

func holdsUnbinds(k kind) bool { return !k.UnbindRollsNow }
func rollsUnbinds(k kind) bool { return k.UnbindRollsNow }

// restartsWhileHeld: `kubectl rollout restart` restarts the kind while held (a paused
// Deployment's restart is refused by kubectl; its owner resumes it instead).
func restartsWhileHeld(k kind) bool { return k.Restart[1] == "restart" }
func resumesWhileHeld(k kind) bool  { return k.Restart[1] == "resume" }

// deploysWithKubectl: the kind's own deploy is `kubectl set image` (a StatefulSet's is Korifi's
// `cf push`, which the simulation models and this control plane does not run).
func deploysWithKubectl(k kind) bool { return k.Kind != "StatefulSet" }

var deferScenarios = []scenario{
	{
		name: "bind one service to a running app",
		run: func(t *testing.T, k kind) row {
			a := newApp(t, k)
			a.bind(upsi)
			r := a.measure(nil)
			a.mustBeHeldWith("+" + upsi)
			return r
		},
	},
	{
		name: "bind three services in a row",
		run: func(t *testing.T, k kind) row {
			a := newApp(t, k)
			for _, s := range []string{upsi, "orders-db", "cache"} {
				a.bind(s)
				a.settled("the bind of " + s)
				if ever := a.podsEver(); ever != k.Pods {
					t.Fatalf("%d pods were ever created after the bind of %s, want the first %d only", ever, s, k.Pods)
				}
			}
			r := a.measure(nil)
			// Only the first bind is sure to be listed: the projector's webhook folds a binding
			// its controller has not written yet into the next write of the workload, after
			// restage-gate (the projector race, docs/testing.md); the guard refuses such a write.
			a.mustBeHeldWith("+" + upsi)
			return r
		},
	},
	{
		name: "bind, then delete a pod",
		run: func(t *testing.T, k kind) row {
			a := boundApp(t, k, "orders-db")
			a.deletePod()
			r := a.measure(nil)
			a.mustBeHeldWith("+orders-db")
			return r
		},
	},
	{
		name:  "bind, then kubectl rollout restart",
		kinds: restartsWhileHeld,
		run: func(t *testing.T, k kind) row {
			a := boundApp(t, k, "orders-db")
			return a.releasedBy(func() { a.mustKubectl(k.restart(a.name)...) })
		},
	},
	{
		name:  "bind, then kubectl rollout resume (kubectl rollout restart is refused while held)",
		kinds: resumesWhileHeld,
		run: func(t *testing.T, k kind) row {
			a := boundApp(t, k, "orders-db")
			if out, err := a.kubectl("rollout", "restart", k.resourceName(a.name)); err == nil {
				t.Fatalf("kubectl rollout restart of a held %s succeeded:\n%s", k.Kind, out)
			}
			return a.releasedBy(func() { a.mustKubectl(k.restart(a.name)...) })
		},
	},
	{
		name: "bind, then kubectl annotate restage-gate.io/release=now",
		run: func(t *testing.T, k kind) row {
			a := boundApp(t, k, "orders-db")
			return a.releasedBy(func() {
				a.mustKubectl("annotate", k.resourceName(a.name), "restage-gate.io/release=now", "--overwrite")
			})
		},
	},
	{
		name:  "bind two, then kubectl set image",
		kinds: deploysWithKubectl,
		run: func(t *testing.T, k kind) row {
			a := boundApp(t, k, upsi, "orders-db")
			container := a.firstContainer()
			return a.releasedBy(func() {
				a.mustKubectl("set", "image", k.resourceName(a.name), container+"=registry.example.com/apps/next:2")
			})
		},
	},
	{
		name:  "bind, then unbind another service (rolls now, the held bind with it)",
		kinds: rollsUnbinds,
		run: func(t *testing.T, k kind) row {
			a := runningWith(t, k, "orders-db")
			a.bind("cache")
			a.settled("the bind")
			a.mustBeHeldWith("+cache")
			return a.releasedBy(func() { a.unbind("orders-db") })
		},
	},
}

func TestDefer(t *testing.T) {
	install(t, "policy.yaml")
	for _, s := range deferScenarios {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for _, k := range kinds {
				if s.kinds != nil && !s.kinds(k) {
					continue
				}
				t.Run(k.Kind, func(t *testing.T) {
					t.Parallel()
					agrees(t, k, s.name, s.run(t, k))
				})
			}
		})
	}

	t.Run("an unbind of a kind that holds unbinds replaces no pod", func(t *testing.T) {
		t.Parallel()
		eachKind(t, func(t *testing.T, k kind) {
			if !holdsUnbinds(k) {
				t.Skipf("a %s rolls an unbind now (the row above)", k.Kind)
			}
			a := runningWith(t, k, "orders-db")
			before := a.running()
			a.unbind("orders-db")
			a.settled("the unbind")
			if n := a.running().replaced(before); n != 0 {
				t.Fatalf("the unbind replaced %d pods", n)
			}
			a.mustBeHeldWith("-orders-db")
		})
	})

	t.Run("the owner's own template changes roll at once, by kubectl set env and by server-side apply", func(t *testing.T) {
		t.Parallel()
		eachKind(t, func(t *testing.T, k kind) {
			a := newApp(t, k)
			before := a.running()
			a.mustKubectl("set", "env", k.resourceName(a.name), "FEATURE_FLAG=on")
			a.waitRolledOut("the owner's rollout")
			if n := a.running().replaced(before); n != k.Pods {
				t.Fatalf("the owner's kubectl set env replaced %d of %d pods", n, k.Pods)
			}
			if a.held() {
				t.Fatalf("the owner's change was held: %s", describe(a))
			}

			before = a.running()
			applied := k.fixture(t)
			applied.SetNamespace(a.namespace)
			containers, _, _ := unstructured.NestedSlice(applied.Object, "spec", "template", "spec", "containers")
			first := containers[0].(map[string]any)
			first["image"] = first["image"].(string) + "-next"
			_ = unstructured.SetNestedSlice(applied.Object, containers, "spec", "template", "spec", "containers")
			a.mustKubectl("apply", "--server-side", "--force-conflicts", "-f", writeManifest(t, applied))
			a.waitRolledOut("the owner's server-side apply")
			if n := a.running().replaced(before); n != k.Pods {
				t.Fatalf("the owner's server-side apply replaced %d of %d pods", n, k.Pods)
			}
			if a.held() {
				t.Fatalf("the owner's server-side apply was held: %s", describe(a))
			}
		})
	})
}

// releasedBy measures the restage step and checks it released the hold.
func (a *app) releasedBy(restage func()) row {
	a.t.Helper()
	if !a.held() {
		a.t.Fatalf("not held before the restage: %s", describe(a))
	}
	r := a.measure(restage)
	if obj := a.object(); obj.GetLabels()[heldLabel] != "" || a.kind.holds(obj) {
		a.t.Fatalf("still held after the restage: %s", describe(a))
	}
	return r
}

// mustBeHeldWith checks the markers: held, and restage-gate.io/pending lists these changes.
func (a *app) mustBeHeldWith(changes ...string) {
	a.t.Helper()
	if !a.held() {
		a.t.Fatalf("not held: %s", describe(a))
	}
	pending := a.object().GetAnnotations()["restage-gate.io/pending"]
	for _, c := range changes {
		if !strings.Contains(pending, c) {
			a.t.Fatalf("restage-gate.io/pending is %q, want it to list %s", pending, c)
		}
	}
}

// firstContainer names the workload's first container.
func (a *app) firstContainer() string {
	containers, _, _ := unstructured.NestedSlice(a.object().Object, "spec", "template", "spec", "containers")
	return containers[0].(map[string]any)["name"].(string)
}

// describe is the workload's control and markers, for failure messages.
func describe(a *app) string {
	control, _, _ := unstructured.NestedFieldNoCopy(a.object().Object, a.kind.Control...)
	return strings.Join(a.kind.Control, ".") + "=" + toString(control) + " markers [" + strings.Join(markers(a), " ") + "]"
}
