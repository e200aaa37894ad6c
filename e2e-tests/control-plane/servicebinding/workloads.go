// How the reconciler writes a projected workload, after reconciler.io/runtime's ResourceManager
// as the runtime's PatchWorkloads uses it: a full Update of the object, skipped when nothing would
// change, and a remembered patch of what admission webhooks changed in the last Update so the
// reconciler does not keep undoing a webhook's mutation while the workload's generation stands.

package servicebinding

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	jsonpatchcreate "gomodules.xyz/jsonpatch/v2"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
)

// mutationPatchTTL is how long the runtime remembers a webhook's mutation of its write.
const mutationPatchTTL = time.Hour

// workloadManager writes workloads and remembers webhook mutations, keyed by workload UID.
type workloadManager struct {
	client    dynamic.Interface
	mutations *cache.Expiring
}

func newWorkloadManager(client dynamic.Interface) *workloadManager {
	return &workloadManager{client: client, mutations: cache.NewExpiring()}
}

// mutationPatch is a JSON Patch from what the reconciler sent to what the API server stored,
// valid only for the generation it was taken at.
type mutationPatch struct {
	generation int64
	patch      []byte
}

func newMutationPatch(sent, stored *unstructured.Unstructured) (*mutationPatch, error) {
	sentJSON, err := json.Marshal(sent)
	if err != nil {
		return nil, err
	}
	storedJSON, err := json.Marshal(stored)
	if err != nil {
		return nil, err
	}
	ops, err := jsonpatchcreate.CreatePatch(sentJSON, storedJSON)
	if err != nil {
		return nil, err
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return &mutationPatch{generation: sent.GetGeneration(), patch: patch}, nil
}

func (p *mutationPatch) apply(target *unstructured.Unstructured) error {
	if target.GetGeneration() != p.generation {
		return fmt.Errorf("patch generation %d did not match target generation %d", p.generation, target.GetGeneration())
	}
	decoded, err := jsonpatch.DecodePatch(p.patch)
	if err != nil {
		return err
	}
	doc, err := json.Marshal(target)
	if err != nil {
		return err
	}
	patched, err := decoded.Apply(doc)
	if err != nil {
		return err
	}
	next := &unstructured.Unstructured{}
	if err := next.UnmarshalJSON(patched); err != nil {
		return err
	}
	target.Object = next.Object
	return nil
}

// manage brings the workload to desired: desired is actual with the projection applied.
func (m *workloadManager) manage(ctx context.Context, gvr schema.GroupVersionResource, actual, desired *unstructured.Unstructured) error {
	log := klog.FromContext(ctx)

	// replay what webhooks changed in our last write, so it does not count as a difference
	desiredPatched := desired.DeepCopy()
	if p, ok := m.mutations.Get(actual.GetUID()); ok {
		if err := p.(*mutationPatch).apply(desiredPatched); err != nil {
			log.V(2).Info("unable to patch desired workload from mutation cache, this is usually benign", "error", err.Error())
			desiredPatched = desired.DeepCopy()
		}
	}

	// the runtime's MergeBeforeUpdate takes the whole desired object
	current := actual.DeepCopy()
	current.SetUnstructuredContent(desiredPatched.DeepCopy().UnstructuredContent())
	if equality.Semantic.DeepEqual(current, actual) {
		log.V(4).Info("workload is in sync, no update required", "workload", klog.KObj(actual))
		return nil
	}
	log.V(2).Info("updating workload", "workload", klog.KObj(actual), "resourceVersion", actual.GetResourceVersion())
	stored, err := m.client.Resource(gvr).Namespace(current.GetNamespace()).Update(ctx, current, metav1.UpdateOptions{})
	if err != nil {
		return err
	}

	// what the API server stored differs from what we sent by the webhooks' and defaults' doing
	patch, err := newMutationPatch(desired, stored)
	if err != nil {
		log.V(2).Info("unable to generate mutation patch", "error", err.Error())
		return nil
	}
	m.mutations.Set(stored.GetUID(), patch, mutationPatchTTL)
	return nil
}
