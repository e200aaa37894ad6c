// The ServiceBinding reconciler, after the runtime's controllers/servicebinding_controller.go as
// reconciler.io/runtime runs it, on client-go alone: finalizer, service and workload resolution,
// projection written with full Updates, status conditions, and re-reconciliation on resync and
// whenever a bound workload or provisioned service changes.

package servicebinding

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// DefaultResync is how often RunController reconciles every ServiceBinding again without a
// change: controller-runtime's default sync period, which the runtime's manager keeps. A shorter
// one would fold bindings into no-op writes far more often than a cluster does.
const DefaultResync = 10 * time.Hour

// ControllerOptions tune a Controller.
type ControllerOptions struct {
	// Resync is the period of the ServiceBinding informer's resync; zero means DefaultResync.
	Resync time.Duration
}

// Controller reconciles ServiceBindings in all namespaces. It is also the BindingSource the
// admission webhook reads, as the runtime's webhook reads the manager's cache.
type Controller struct {
	client   dynamic.Interface
	mapper   meta.RESTMapper
	bindings cache.SharedIndexInformer
	factory  dynamicinformer.DynamicSharedInformerFactory
	queue    workqueue.TypedRateLimitingInterface[string]
	manager  *workloadManager
	now      func() time.Time

	// triggers are informers on the workload and service kinds bindings refer to
	triggerMu      sync.Mutex
	triggerFactory dynamicinformer.DynamicSharedInformerFactory
	triggered      map[schema.GroupVersionResource]bool
	stop           <-chan struct{}
}

var errHaltSubReconcilers = errors.New("halt sub-reconcilers")

// RunController reconciles ServiceBindings until ctx ends.
func RunController(ctx context.Context, cfg *rest.Config) error {
	c, err := NewController(cfg, ControllerOptions{})
	if err != nil {
		return err
	}
	return c.Run(ctx)
}

// NewController connects to the cluster; Run starts it.
func NewController(cfg *rest.Config, opts ControllerOptions) (*Controller, error) {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	return newController(client, mapper, opts), nil
}

func newController(client dynamic.Interface, mapper meta.RESTMapper, opts ControllerOptions) *Controller {
	resync := opts.Resync
	if resync <= 0 {
		resync = DefaultResync
	}
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, resync)
	c := &Controller{
		client:   client,
		mapper:   mapper,
		factory:  factory,
		bindings: factory.ForResource(ServiceBindingsResource).Informer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "servicebinding"},
		),
		manager:        newWorkloadManager(client),
		now:            time.Now,
		triggerFactory: dynamicinformer.NewDynamicSharedInformerFactory(client, 0),
		triggered:      map[schema.GroupVersionResource]bool{},
	}
	enqueue := func(obj interface{}) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	_, _ = c.bindings.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
		DeleteFunc: enqueue,
	})
	return c
}

// Run reconciles until ctx ends, with one worker as the runtime's manager has.
func (c *Controller) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("servicebinding")
	ctx = klog.NewContext(ctx, log)
	defer c.queue.ShutDown()

	c.triggerMu.Lock()
	c.stop = ctx.Done()
	c.triggerMu.Unlock()
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	defer c.triggerFactory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.bindings.HasSynced) {
		return nil
	}
	log.V(1).Info("started")

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for c.processNext(ctx) {
		}
	}()
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		if ctx.Err() == nil {
			klog.FromContext(ctx).V(1).Info("reconcile failed, will retry", "key", key, "error", err.Error())
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// Bindings lists the ServiceBindings of a namespace from the informer cache, by name.
func (c *Controller) Bindings(ctx context.Context, namespace string) ([]Binding, error) {
	if !c.bindings.HasSynced() && !cache.WaitForCacheSync(ctx.Done(), c.bindings.HasSynced) {
		return nil, fmt.Errorf("ServiceBinding cache not synced: %w", ctx.Err())
	}
	objs, err := c.bindings.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	out := make([]Binding, 0, len(objs))
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		b, err := BindingFromUnstructured(u)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// reconcile is ResourceReconciler.Reconcile: read from the cache, default, initialise conditions,
// run the binding reconciler, then write the status when it changed and the binding is not being
// deleted. The status is written even when the reconciler failed.
func (c *Controller) reconcile(ctx context.Context, key string) error {
	obj, exists, err := c.bindings.GetIndexer().GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		return nil
	}
	stored := obj.(*unstructured.Unstructured).DeepCopy()
	b, err := BindingFromUnstructured(stored)
	if err != nil {
		return err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("servicebinding", key))
	original := copyStatus(b.Status)
	b.Default()
	manageConditions(&b.Status, c.now()).initialize()

	err = c.reconcileBinding(ctx, &b)

	syncLastTransitionTime(b.Status.Conditions, original.Conditions)
	if !equality.Semantic.DeepEqual(b.Status, original) && b.DeletionTimestamp == nil {
		if updateErr := c.updateStatus(ctx, stored, &b); updateErr != nil {
			return updateErr
		}
	}
	return err
}

func (c *Controller) reconcileBinding(ctx context.Context, b *Binding) error {
	if b.DeletionTimestamp != nil && len(b.Finalizers) == 0 {
		return nil
	}
	if err := c.withFinalizer(ctx, b); err != nil && !errors.Is(err, errHaltSubReconcilers) {
		return err
	}
	b.Status.ObservedGeneration = b.Generation
	return nil
}

func (c *Controller) withFinalizer(ctx context.Context, b *Binding) error {
	deleting := b.DeletionTimestamp != nil
	if !deleting {
		if err := c.ensureFinalizer(ctx, b, true); err != nil {
			return err
		}
	}
	if err := c.sequence(ctx, b); err != nil {
		return err
	}
	if deleting {
		return c.ensureFinalizer(ctx, b, false)
	}
	return nil
}

// sequence runs ResolveBindingSecret (not while deleting), ResolveWorkloads, ProjectBinding and
// PatchWorkloads.
func (c *Controller) sequence(ctx context.Context, b *Binding) error {
	deleting := b.DeletionTimestamp != nil
	if !deleting {
		if err := c.resolveBindingSecret(ctx, b); err != nil {
			return err
		}
	}
	gvr, workloads, err := c.resolveWorkloads(ctx, b)
	if err != nil {
		return err
	}
	projected := make([]*unstructured.Unstructured, len(workloads))
	for i, w := range workloads {
		p := w.DeepCopy()
		if deleting {
			err = Unproject(p, *b)
		} else {
			err = Project(p, *b)
		}
		if err != nil {
			return err
		}
		projected[i] = p
	}
	return c.patchWorkloads(ctx, b, gvr, workloads, projected)
}

func (c *Controller) resolveBindingSecret(ctx context.Context, b *Binding) error {
	conditions := manageConditions(&b.Status, c.now())
	secretName, err := c.lookupBindingSecret(ctx, b)
	if err != nil {
		if apierrors.IsNotFound(err) {
			// leave Unknown, the provisioned service may be created shortly
			conditions.markUnknown(ConditionServiceAvailable, "ServiceNotFound", "the service was not found")
			return nil
		}
		if apierrors.IsForbidden(err) {
			conditions.markFalse(ConditionServiceAvailable, "ServiceForbidden", "the controller does not have permission to get the service")
			return nil
		}
		return err
	}
	if secretName == "" {
		conditions.markUnknown(ConditionServiceAvailable, "ServiceMissingBinding", "the service was found, but did not contain a binding secret")
		b.Status.Binding = nil
		return nil
	}
	conditions.markTrue(ConditionServiceAvailable, "ResolvedBindingSecret", "")
	previous := b.SecretName()
	b.Status.Binding = &SecretReference{Name: secretName}
	if previous != secretName {
		// let the new secret reach the API server before projecting it, so the webhook sees it;
		// the status change brings the next reconcile
		return errHaltSubReconcilers
	}
	return nil
}

func (c *Controller) lookupBindingSecret(ctx context.Context, b *Binding) (string, error) {
	ref := b.Spec.Service
	if ref.APIVersion == "v1" && ref.Kind == "Secret" {
		// direct secret reference
		return ref.Name, nil
	}
	gvr, namespaced, err := c.resourceFor(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	if err != nil {
		return "", err
	}
	c.ensureTrigger(ctx, gvr)
	var ri dynamic.ResourceInterface = c.client.Resource(gvr)
	if namespaced {
		ri = c.client.Resource(gvr).Namespace(b.Namespace)
	}
	service, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	// a missing value counts as empty
	name, _, err := unstructured.NestedString(service.Object, "status", "binding", "name")
	return name, err
}

// resolveWorkloads lists the workload kind in the binding's namespace, live as the runtime's
// unstructured client does, and keeps those the binding names or selects or already projected
// into.
func (c *Controller) resolveWorkloads(ctx context.Context, b *Binding) (schema.GroupVersionResource, []*unstructured.Unstructured, error) {
	ref := b.Spec.Workload
	var selector labels.Selector
	if ref.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(ref.Selector)
		if err != nil {
			return schema.GroupVersionResource{}, nil, err
		}
		selector = s
	}
	gvr, _, err := c.resourceFor(schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind))
	if err != nil {
		return gvr, nil, err
	}
	c.ensureTrigger(ctx, gvr)

	list, err := c.client.Resource(gvr).Namespace(b.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		if apierrors.IsForbidden(err) {
			what := "list the workloads"
			if ref.Name != "" {
				what = "get the workload"
			}
			manageConditions(&b.Status, c.now()).markFalse(ConditionWorkloadProjected, "WorkloadForbidden", "the controller does not have permission to %s", what)
			return gvr, nil, nil
		}
		return gvr, nil, err
	}
	var workloads []*unstructured.Unstructured
	found := false
	for i := range list.Items {
		w := &list.Items[i]
		if IsProjected(w, *b) {
			workloads = append(workloads, w)
			found = found || w.GetName() == ref.Name
			continue
		}
		if ref.Name != "" {
			if w.GetName() == ref.Name {
				workloads = append(workloads, w)
				found = true
			}
			continue
		}
		if selector != nil && selector.Matches(labels.Set(w.GetLabels())) {
			workloads = append(workloads, w)
		}
	}
	if ref.Name != "" && !found {
		// leave Unknown, the workload may be created shortly
		manageConditions(&b.Status, c.now()).markUnknown(ConditionWorkloadProjected, "WorkloadNotFound", "the workload was not found")
	}
	return gvr, workloads, nil
}

func (c *Controller) patchWorkloads(ctx context.Context, b *Binding, gvr schema.GroupVersionResource, workloads, projected []*unstructured.Unstructured) error {
	conditions := manageConditions(&b.Status, c.now())
	for i := range workloads {
		if err := c.manager.manage(ctx, gvr, workloads[i], projected[i]); err != nil {
			if apierrors.IsNotFound(err) {
				// deleted while we were working on it
				continue
			}
			if apierrors.IsForbidden(err) {
				conditions.markFalse(ConditionWorkloadProjected, "WorkloadForbidden", "the controller does not have permission to update the workloads")
				return nil
			}
			// a conflict comes back here: the retry reads the workload again
			return err
		}
	}
	// True only if nothing else has set the condition during this reconcile
	if cond := conditions.get(ConditionWorkloadProjected); isStatus(cond, metav1.ConditionUnknown) && cond.Reason == "Initializing" {
		conditions.markTrue(ConditionWorkloadProjected, "WorkloadProjected", "")
	}
	return nil
}

// ensureFinalizer adds or removes the finalizer with a merge patch that carries the
// resourceVersion, so it fails on a stale binding.
func (c *Controller) ensureFinalizer(ctx context.Context, b *Binding, add bool) error {
	has := false
	var kept []string
	for _, f := range b.Finalizers {
		if f == Finalizer {
			has = true
			continue
		}
		kept = append(kept, f)
	}
	if has == add {
		return nil
	}
	finalizers := kept
	if add {
		finalizers = append(append([]string{}, b.Finalizers...), Finalizer)
	}
	var value interface{} = finalizers
	if len(finalizers) == 0 {
		value = nil
	}
	patch, err := json.Marshal(map[string]interface{}{
		"metadata": map[string]interface{}{
			"finalizers":      value,
			"resourceVersion": b.ResourceVersion,
		},
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).V(2).Info("patching finalizers", "add", add)
	patched, err := c.client.Resource(ServiceBindingsResource).Namespace(b.Namespace).Patch(ctx, b.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	b.Finalizers = patched.GetFinalizers()
	b.ResourceVersion = patched.GetResourceVersion()
	b.Generation = patched.GetGeneration()
	return nil
}

func (c *Controller) updateStatus(ctx context.Context, stored *unstructured.Unstructured, b *Binding) error {
	status, err := statusToUnstructured(b.Status)
	if err != nil {
		return err
	}
	obj := stored.DeepCopy()
	obj.SetResourceVersion(b.ResourceVersion)
	obj.SetFinalizers(b.Finalizers)
	obj.SetGeneration(b.Generation)
	obj.Object["status"] = status
	klog.FromContext(ctx).V(2).Info("updating status")
	_, err = c.client.Resource(ServiceBindingsResource).Namespace(b.Namespace).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	return err
}

// resourceFor maps a kind to its resource, reading discovery again once when the kind is new.
func (c *Controller) resourceFor(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		if r, ok := c.mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			m, err = c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		}
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// ensureTrigger watches a workload or service resource so that any change to an object a binding
// refers to reconciles that binding, which the runtime does with its tracker and the
// servicebinding-trigger validating webhook.
func (c *Controller) ensureTrigger(ctx context.Context, gvr schema.GroupVersionResource) {
	c.triggerMu.Lock()
	defer c.triggerMu.Unlock()
	if c.triggered[gvr] || c.stop == nil {
		return
	}
	c.triggered[gvr] = true
	inf := c.triggerFactory.ForResource(gvr).Informer()
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.trigger,
		UpdateFunc: func(_, obj interface{}) { c.trigger(obj) },
		DeleteFunc: c.trigger,
	})
	c.triggerFactory.Start(c.stop)
	klog.FromContext(ctx).V(2).Info("watching for triggers", "resource", gvr.String())
}

// trigger enqueues the bindings that refer to obj: as workload by name or selector, or as
// provisioned service by name.
func (c *Controller) trigger(obj interface{}) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	gk := u.GroupVersionKind().GroupKind()
	objs, err := c.bindings.GetIndexer().ByIndex(cache.NamespaceIndex, u.GetNamespace())
	if err != nil {
		return
	}
	for _, o := range objs {
		bu, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		b, err := BindingFromUnstructured(bu)
		if err != nil {
			continue
		}
		if refersTo(b, gk, u) {
			if key, err := cache.MetaNamespaceKeyFunc(bu); err == nil {
				c.queue.Add(key)
			}
		}
	}
}

func refersTo(b Binding, gk schema.GroupKind, obj *unstructured.Unstructured) bool {
	w := b.Spec.Workload
	if schema.FromAPIVersionAndKind(w.APIVersion, w.Kind).GroupKind() == gk {
		if w.Name != "" && w.Name == obj.GetName() {
			return true
		}
		if w.Name == "" && w.Selector != nil {
			if s, err := metav1.LabelSelectorAsSelector(w.Selector); err == nil && s.Matches(labels.Set(obj.GetLabels())) {
				return true
			}
		}
	}
	s := b.Spec.Service
	return schema.FromAPIVersionAndKind(s.APIVersion, s.Kind).GroupKind() == gk && s.Name == obj.GetName()
}
