// The projector race on the real API server: a ServiceBinding whose controller has not written
// it yet (the controller is held back with SIGSTOP) is folded by the projector's webhook into
// the next write of the workload, Korifi's runner's Update of the object as it reads it. Which
// webhook the API server calls first decides what restage-gate sees: the configurations are
// called in the order of their names, so Kubewarden's `clusterwide-restage-gate` comes before
// the runtime's `servicebinding-admission-projector` (the real order), and a copy of the
// projector's configuration named to sort first stands for the other.
package scenarios

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const projectorConfiguration = "servicebinding-admission-projector"

func TestProjectorRace(t *testing.T) {
	statefulSet := kinds[0]
	for _, setup := range []struct {
		label string
		files []string
	}{
		{"defer only", []string{"policy.yaml"}},
		{"defer + guard", []string{"policy.yaml", "guard.yaml"}},
	} {
		for _, projectorFirst := range []bool{false, true} {
			order := "restage-gate's webhook first, the real order"
			if projectorFirst {
				order = "the projector's webhook first"
			}
			name := fmt.Sprintf("the projector race: a binding not yet projected, folded into the runner's write (%s; %s)", setup.label, order)
			t.Run(name, func(t *testing.T) {
				install(t, setup.files...)
				if projectorFirst {
					projectorCalledFirst(t)
				}
				a := newApp(t, statefulSet)
				agrees(t, statefulSet, name, a.race())
			})
		}
	}
}

// race holds the binding controller back, binds, sends the runner's write (retried on its next
// reconcile when refused, as the runner does), lets the controller go on, and measures.
func (a *app) race() row {
	a.t.Helper()
	if err := env.cluster.Signal("servicebinding-controller", syscall.SIGSTOP); err != nil {
		a.t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if err := env.cluster.Signal("servicebinding-controller", syscall.SIGCONT); err != nil {
				a.t.Fatal(err)
			}
		}
	}
	defer resume()
	a.createBinding("orders-db")
	a.resolveBinding("orders-db")
	refused := 0
	if err := a.runnerWrite(); err != nil {
		if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !strings.Contains(err.Error(), "denied") {
			a.t.Fatalf("the runner's write failed other than by a refusal: %v", err)
		}
		refused++
	}
	resume()
	a.waitProjected("orders-db")
	if refused > 0 {
		// The runner's next reconcile writes again, now that the binding is projected.
		if err := a.runnerWrite(); err != nil {
			a.t.Fatalf("the runner's retry was refused too: %v", err)
		}
	}
	r := a.measure(nil)
	r.refused = refused
	return r
}

// resolveBinding writes what the controller's first reconcile of a binding writes before it
// projects anything (the runtime halts there once): the binding's secret in its status. The
// projector's webhook projects only a binding whose secret is resolved.
func (a *app) resolveBinding(service string) {
	a.t.Helper()
	ctx := context.Background()
	bindings := env.dynamic.Resource(serviceBindings).Namespace(a.namespace)
	binding, err := bindings.Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	binding.Object["status"] = map[string]any{
		"observedGeneration": binding.GetGeneration(),
		"binding":            map[string]any{"name": service},
	}
	resolved, err := bindings.UpdateStatus(ctx, binding, metav1.UpdateOptions{})
	if err != nil {
		a.t.Fatal(err)
	}
	// The webhook reads bindings from a watch: wait until it folds this one into a write, seen
	// in a server-side dry run of the runner's write (projected, or refused by the guard for
	// the binding it now carries).
	key := "projector.servicebinding.io/secret-" + string(resolved.GetUID())
	a.waitFor("the projector's webhook to see "+service, func() (bool, string) {
		current := a.object()
		answered, err := env.dynamic.Resource(a.kind.gvr()).Namespace(a.namespace).Update(ctx, current, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return strings.Contains(err.Error(), service), err.Error()
		}
		annotations, _, _ := unstructured.NestedStringMap(answered.Object, "spec", "template", "metadata", "annotations")
		return annotations[key] == service, "a dry run of the runner's write is not projected yet"
	})
}

// runnerWrite is Korifi's statefulset-runner writing the StatefulSet with nothing of its own to
// change: an Update of the object as read, which the API server still admits through every
// webhook.
func (a *app) runnerWrite() error {
	ctx := context.Background()
	current := a.object()
	_, err := env.dynamic.Resource(a.kind.gvr()).Namespace(a.namespace).Update(ctx, current, metav1.UpdateOptions{FieldManager: "statefulset-runner"})
	return err
}

// projectorCalledFirst copies the projector's configuration under a name that sorts before
// Kubewarden's and removes the original, until the test ends.
func projectorCalledFirst(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	api := env.client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	original, err := api.Get(ctx, projectorConfiguration, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := original.DeepCopy()
	first.ObjectMeta = metav1.ObjectMeta{Name: "a-" + projectorConfiguration, Labels: original.Labels, Annotations: original.Annotations}
	if _, err := api.Create(ctx, first, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := api.Delete(ctx, projectorConfiguration, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		restored := original.DeepCopy()
		restored.ObjectMeta = metav1.ObjectMeta{Name: projectorConfiguration, Labels: original.Labels, Annotations: original.Annotations}
		if _, err := api.Create(ctx, restored, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Error(err)
		}
		_ = api.Delete(ctx, first.Name, metav1.DeleteOptions{})
	})
	// The API server reads webhook configurations through an informer: wait until it calls
	// the renamed one (a write it admits shows the projector's work only once it does).
	time.Sleep(2 * time.Second)
}
