// The kinds the scenarios run, as data: the fixture a workload is made from, how the kind is
// held, how its owner restarts it, what an unbind does (README, "Modes"), and when its rollout is
// complete.
package scenarios

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type kind struct {
	Kind     string
	Group    string
	Version  string
	Resource string
	// Fixture is a workload under e2e-tests/fixtures.
	Fixture string
	// Pods is how many pods the workload runs: three replicas, or one per node.
	Pods int
	// Control is the path of the field restage-gate sets to hold a rollout, and Held its value
	// while held.
	Control []string
	Held    any
	// Restart is the owner's restart, as kubectl arguments; NAME stands for the workload.
	Restart []string
	// UnbindRollsNow: an unbind is not held (a Deployment's, whose paused template cannot
	// keep a pod from mounting the deleted secret).
	UnbindRollsNow bool
}

var kinds = []kind{
	{
		Kind: "StatefulSet", Group: "apps", Version: "v1", Resource: "statefulsets",
		Fixture: "e2e-tests/fixtures/korifi-v0.14/statefulset-0-unbound.json", Pods: 3,
		Control: []string{"spec", "updateStrategy", "type"}, Held: "OnDelete",
		Restart: []string{"rollout", "restart", "statefulset/NAME"},
	},
	{
		Kind: "DaemonSet", Group: "apps", Version: "v1", Resource: "daemonsets",
		Fixture: "e2e-tests/fixtures/workloads/daemonset-unbound.json", Pods: 3,
		Control: []string{"spec", "updateStrategy", "type"}, Held: "OnDelete",
		Restart: []string{"rollout", "restart", "daemonset/NAME"},
	},
	{
		Kind: "Deployment", Group: "apps", Version: "v1", Resource: "deployments",
		Fixture: "e2e-tests/fixtures/workloads/deployment-unbound.json", Pods: 3,
		Control: []string{"spec", "paused"}, Held: true,
		Restart:        []string{"rollout", "resume", "deployment/NAME"},
		UnbindRollsNow: true,
	},
}

func (k kind) gvr() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: k.Group, Version: k.Version, Resource: k.Resource}
}

func (k kind) apiVersion() string { return k.Group + "/" + k.Version }

// resourceName is the kubectl name of the workload (statefulset/NAME).
func (k kind) resourceName(name string) string { return strings.ToLower(k.Kind) + "/" + name }

// fixture is the workload of the fixture as a user would create it: what the API server
// assigns removed, three replicas.
func (k kind) fixture(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{Object: readJSON(t, k.Fixture)}
	for _, field := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "ownerReferences", "managedFields"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", field)
	}
	unstructured.RemoveNestedField(obj.Object, "status")
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); found || k.Kind != "DaemonSet" {
		_ = unstructured.SetNestedField(obj.Object, int64(k.Pods), "spec", "replicas")
	}
	return obj
}

// holds says whether the kind's control has its held value.
func (k kind) holds(obj *unstructured.Unstructured) bool {
	value, found, _ := unstructured.NestedFieldNoCopy(obj.Object, k.Control...)
	return found && value == k.Held
}

// restart is the owner's restart for the workload NAME.
func (k kind) restart(name string) []string {
	var args []string
	for _, a := range k.Restart {
		args = append(args, strings.ReplaceAll(a, "NAME", name))
	}
	return args
}

// rolledOut says whether the controller has finished rolling the current template out.
func (k kind) rolledOut(obj *unstructured.Unstructured) (bool, string) {
	status := func(field string) int64 {
		v, _, _ := unstructured.NestedInt64(obj.Object, "status", field)
		return v
	}
	if status("observedGeneration") < obj.GetGeneration() {
		return false, "the controller has not seen the latest generation"
	}
	switch k.Kind {
	case "StatefulSet":
		current, _, _ := unstructured.NestedString(obj.Object, "status", "currentRevision")
		update, _, _ := unstructured.NestedString(obj.Object, "status", "updateRevision")
		if current != update || status("updatedReplicas") != int64(k.Pods) || status("readyReplicas") != int64(k.Pods) {
			return false, fmt.Sprintf("revision %s → %s, %d updated, %d ready", current, update, status("updatedReplicas"), status("readyReplicas"))
		}
	case "DaemonSet":
		if status("updatedNumberScheduled") != int64(k.Pods) || status("numberReady") != int64(k.Pods) {
			return false, fmt.Sprintf("%d updated, %d ready", status("updatedNumberScheduled"), status("numberReady"))
		}
	case "Deployment":
		if status("updatedReplicas") != int64(k.Pods) || status("availableReplicas") != int64(k.Pods) || status("replicas") != int64(k.Pods) {
			return false, fmt.Sprintf("%d updated, %d available, %d in all", status("updatedReplicas"), status("availableReplicas"), status("replicas"))
		}
		// The controller says so in its Progressing condition, which restage-gate reads too.
		conditions, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		complete := false
		for _, c := range conditions {
			condition, _ := c.(map[string]any)
			if condition["type"] == "Progressing" && condition["reason"] == "NewReplicaSetAvailable" {
				complete = true
			}
		}
		if !complete {
			return false, "the Progressing condition does not say NewReplicaSetAvailable"
		}
	}
	return true, ""
}

// eachKind runs a scenario for every kind, side by side.
func eachKind(t *testing.T, scenario func(t *testing.T, k kind)) {
	for _, k := range kinds {
		t.Run(k.Kind, func(t *testing.T) {
			t.Parallel()
			scenario(t, k)
		})
	}
}
