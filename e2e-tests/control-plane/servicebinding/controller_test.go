// Tests of the reconciler on client-go's fake dynamic client: the runtime's turn-by-turn
// behaviour (finalizer, halt after the secret resolves, projection, conditions, unprojection on
// deletion), the write skipped when nothing changes, the webhook-mutation memory, and the
// re-reconcile when a bound workload changes.

package servicebinding

import (
	"context"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

var (
	statefulSets       = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	cfServiceBindings  = schema.GroupVersionResource{Group: "korifi.cloudfoundry.org", Version: "v1alpha1", Resource: "cfservicebindings"}
	upsiKey            = "5c6f1e2a-8b3d-4f70-9e21-3a4b5c6d7e8f/cf-binding-d41d8cd9-8f00-4b20-9e80-0998ecf8427e"
	referenceNamespace = "5c6f1e2a-8b3d-4f70-9e21-3a4b5c6d7e8f"
)

// newBinding is the user-provided reference binding as Korifi creates it: no status, no finalizer.
func newBinding(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	u := referenceWorkload(t, "servicebinding-user-provided.json")
	u.SetAPIVersion(Group + "/v1")
	u.SetFinalizers(nil)
	u.SetResourceVersion("1")
	delete(u.Object, "status")
	return u
}

// cfServiceBinding is the provisioned service the binding refers to.
func cfServiceBinding(secret string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("korifi.cloudfoundry.org/v1alpha1")
	u.SetKind("CFServiceBinding")
	u.SetNamespace(referenceNamespace)
	u.SetName("d41d8cd9-8f00-4b20-9e80-0998ecf8427e")
	if secret != "" {
		_ = unstructured.SetNestedField(u.Object, secret, "status", "binding", "name")
	}
	return u
}

func newFakeController(t *testing.T, objects ...runtime.Object) (*Controller, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		ServiceBindingsResource: "ServiceBindingList",
		statefulSets:            "StatefulSetList",
		cfServiceBindings:       "CFServiceBindingList",
	}, objects...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "korifi.cloudfoundry.org", Version: "v1alpha1", Kind: "CFServiceBinding"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: Group, Version: "v1", Kind: "ServiceBinding"}, meta.RESTScopeNamespace)
	c := newController(client, mapper, ControllerOptions{Resync: time.Hour})
	c.now = func() time.Time { return time.Date(2025, 1, 28, 10, 31, 17, 0, time.UTC) }
	return c, client
}

// startCache fills the binding cache without running workers, so a test drives each reconcile.
func startCache(t *testing.T, c *Controller) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.bindings.HasSynced) {
		t.Fatal("cache not synced")
	}
	return ctx
}

// settle waits until the cache holds the binding as the fake client has it.
func settle(t *testing.T, c *Controller, client *dynamicfake.FakeDynamicClient) {
	t.Helper()
	want := get(t, client, ServiceBindingsResource, upsiKey)
	deadline := time.Now().Add(10 * time.Second)
	for {
		obj, ok, _ := c.bindings.GetIndexer().GetByKey(upsiKey)
		if ok && equalObjects(obj.(*unstructured.Unstructured), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("cache never caught up")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	return show(a.Object) == show(b.Object)
}

func get(t *testing.T, client *dynamicfake.FakeDynamicClient, gvr schema.GroupVersionResource, key string) *unstructured.Unstructured {
	t.Helper()
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u, err := client.Resource(gvr).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func stsKey(t *testing.T) string {
	return referenceNamespace + "/" + referenceWorkload(t, "statefulset-0-unbound.json").GetName()
}

func countUpdates(client *dynamicfake.FakeDynamicClient, resource, subresource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == resource && a.GetSubresource() == subresource {
			n++
		}
	}
	return n
}

func conditionsOf(t *testing.T, u *unstructured.Unstructured) map[string]metav1.Condition {
	t.Helper()
	b, err := BindingFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]metav1.Condition{}
	for _, c := range b.Status.Conditions {
		out[c.Type] = c
	}
	return out
}

func requireCondition(t *testing.T, conds map[string]metav1.Condition, typ string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c, ok := conds[typ]
	if !ok || c.Status != status || c.Reason != reason {
		t.Fatalf("condition %s: got %+v, want %s %s", typ, c, status, reason)
	}
}

func TestReconcilerAddsFinalizerResolvesSecretThenProjectsAndReportsReady(t *testing.T) {
	c, client := newFakeController(t, newBinding(t), cfServiceBinding("d41d8cd9-8f00-4b20-9e80-0998ecf8427e"),
		referenceWorkload(t, "statefulset-0-unbound.json"))
	ctx := startCache(t, c)

	// first turn: finalizer and status.binding, then a halt before any workload is touched
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	sb := get(t, client, ServiceBindingsResource, upsiKey)
	if f := sb.GetFinalizers(); len(f) != 1 || f[0] != Finalizer {
		t.Fatalf("finalizers %v", f)
	}
	if name, _, _ := unstructured.NestedString(sb.Object, "status", "binding", "name"); name != "d41d8cd9-8f00-4b20-9e80-0998ecf8427e" {
		t.Fatalf("status.binding %q", name)
	}
	conds := conditionsOf(t, sb)
	requireCondition(t, conds, ConditionServiceAvailable, metav1.ConditionTrue, "ResolvedBindingSecret")
	requireCondition(t, conds, ConditionWorkloadProjected, metav1.ConditionUnknown, "Initializing")
	requireCondition(t, conds, ConditionReady, metav1.ConditionUnknown, "Initializing")
	if countUpdates(client, "statefulsets", "") != 0 {
		t.Fatal("workload written before the secret reached the API server")
	}

	// second turn: projection and Ready, as the reference binding shows
	settle(t, c, client)
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	sts := get(t, client, statefulSets, stsKey(t))
	want := stored(t, referenceWorkload(t, "statefulset-1-bound-upsi.json"))
	requireSame(t, "spec.template", at(stored(t, sts), "spec", "template"), at(want, "spec", "template"))
	sb = get(t, client, ServiceBindingsResource, upsiKey)
	ref := referenceWorkload(t, "servicebinding-user-provided.json")
	requireSame(t, "status", generic(t, sb.Object["status"]), generic(t, ref.Object["status"]))

	// third turn: nothing to write
	settle(t, c, client)
	updates := len(client.Actions())
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions()[updates:] {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Fatalf("in-sync reconcile wrote: %v", a)
		}
	}
}

func TestReconcilerUnprojectsAndReleasesTheBindingOnDeletion(t *testing.T) {
	b := referenceWorkload(t, "servicebinding-user-provided.json")
	b.SetAPIVersion(Group + "/v1")
	now := metav1.Now()
	b.SetDeletionTimestamp(&now)
	b.SetFinalizers([]string{Finalizer})
	c, client := newFakeController(t, b, referenceWorkload(t, "statefulset-1-bound-upsi.json"))
	ctx := startCache(t, c)
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	sb := get(t, client, ServiceBindingsResource, upsiKey)
	if len(sb.GetFinalizers()) != 0 {
		t.Fatalf("finalizers %v", sb.GetFinalizers())
	}
	if countUpdates(client, "servicebindings", "status") != 0 {
		t.Fatal("status written for a binding being deleted")
	}
	sts := get(t, client, statefulSets, stsKey(t))
	if IsProjected(sts, referenceBinding(t, "servicebinding-user-provided.json")) {
		t.Fatal("still projected")
	}
	got := stored(t, sts)
	if vols := at(got, "spec", "template", "spec", "volumes"); vols != nil {
		t.Fatalf("volumes left: %v", vols)
	}
}

func TestReconcilerReportsAMissingServiceAndWaits(t *testing.T) {
	c, client := newFakeController(t, newBinding(t), referenceWorkload(t, "statefulset-0-unbound.json"))
	ctx := startCache(t, c)
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	conds := conditionsOf(t, get(t, client, ServiceBindingsResource, upsiKey))
	requireCondition(t, conds, ConditionServiceAvailable, metav1.ConditionUnknown, "ServiceNotFound")
	requireCondition(t, conds, ConditionReady, metav1.ConditionUnknown, "ServiceNotFound")
	// the runtime still writes the workload (unprojected, with empty lists the API server drops),
	// so only what would be stored is compared
	want := stored(t, referenceWorkload(t, "statefulset-0-unbound.json"))
	got := stored(t, get(t, client, statefulSets, stsKey(t)))
	requireSame(t, "spec.template", at(got, "spec", "template"), at(want, "spec", "template"))
}

func TestReconcilerLeavesAWebhooksMutationUntilTheGenerationMoves(t *testing.T) {
	c, client := newFakeController(t, newBinding(t), cfServiceBinding("d41d8cd9-8f00-4b20-9e80-0998ecf8427e"),
		referenceWorkload(t, "statefulset-0-unbound.json"))
	// a mutating webhook that takes the projection back out of every write
	client.PrependReactor("update", "statefulsets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		obj := action.(clienttesting.UpdateAction).GetObject().(*unstructured.Unstructured)
		if err := Unproject(obj, referenceBinding(t, "servicebinding-user-provided.json")); err != nil {
			t.Error(err)
		}
		return false, nil, nil
	})
	ctx := startCache(t, c)
	for turn := 0; turn < 2; turn++ {
		if err := c.reconcile(ctx, upsiKey); err != nil {
			t.Fatal(err)
		}
		settle(t, c, client)
	}
	if n := countUpdates(client, "statefulsets", ""); n != 1 {
		t.Fatalf("%d workload updates after the first projection", n)
	}
	// the remembered mutation makes the next turn a no-op
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	if n := countUpdates(client, "statefulsets", ""); n != 1 {
		t.Fatalf("reconciler fought the webhook: %d updates", n)
	}
	// once something else changes the spec, the projection is written again
	sts := get(t, client, statefulSets, stsKey(t))
	sts.SetGeneration(sts.GetGeneration() + 1)
	if err := client.Tracker().Update(statefulSets, sts, sts.GetNamespace()); err != nil {
		t.Fatal(err)
	}
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	if n := countUpdates(client, "statefulsets", ""); n != 2 {
		t.Fatalf("projection not written again after the generation moved: %d updates", n)
	}
}

func TestRunningControllerReprojectsWhenAnotherWriterDropsTheProjection(t *testing.T) {
	c, client := newFakeController(t, newBinding(t), cfServiceBinding("d41d8cd9-8f00-4b20-9e80-0998ecf8427e"),
		referenceWorkload(t, "statefulset-0-unbound.json"))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("projection", func() bool { return IsProjected(get(t, client, statefulSets, stsKey(t)), upsi) })
	waitFor("Ready", func() bool {
		c := conditionsOf(t, get(t, client, ServiceBindingsResource, upsiKey))[ConditionReady]
		return c.Status == metav1.ConditionTrue
	})

	// the running controller is the webhook's source of bindings
	incoming := referenceWorkload(t, "statefulset-0-unbound.json")
	resp := post(t, WebhookHandler(c), review(t, admissionv1.Update, incoming))
	if !IsProjected(&unstructured.Unstructured{Object: patched(t, incoming, resp)}, upsi) {
		t.Fatal("webhook did not fold the binding in")
	}

	// Korifi's runner writes its own template back; the resync is far away, so only the watch on
	// the workload can bring the projection back
	unbound := referenceWorkload(t, "statefulset-0-unbound.json")
	unbound.SetGeneration(5)
	if _, err := client.Resource(statefulSets).Namespace(referenceNamespace).Update(ctx, unbound, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("projection after the runner's write", func() bool { return IsProjected(get(t, client, statefulSets, stsKey(t)), upsi) })
}

func TestReconcilerRetriesAConflictingWorkloadWriteByReadingItAgain(t *testing.T) {
	c, client := newFakeController(t, newBinding(t), cfServiceBinding("d41d8cd9-8f00-4b20-9e80-0998ecf8427e"),
		referenceWorkload(t, "statefulset-0-unbound.json"))
	conflicts := 1
	client.PrependReactor("update", "statefulsets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(statefulSets.GroupResource(), "sts", nil)
		}
		return false, nil, nil
	})
	ctx := startCache(t, c)
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	settle(t, c, client)
	if err := c.reconcile(ctx, upsiKey); !apierrors.IsConflict(err) {
		t.Fatalf("got %v, want the conflict back for a retry", err)
	}
	lists := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == statefulSets {
			lists++
		}
	}
	settle(t, c, client)
	if err := c.reconcile(ctx, upsiKey); err != nil {
		t.Fatal(err)
	}
	relisted := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == statefulSets {
			relisted++
		}
	}
	if relisted != lists+1 {
		t.Fatalf("workload not read again: %d lists before, %d after", lists, relisted)
	}
	if !IsProjected(get(t, client, statefulSets, stsKey(t)), referenceBinding(t, "servicebinding-user-provided.json")) {
		t.Fatal("not projected after the retry")
	}
}
