// What a user sees from kubectl: reject mode's refusal as kubectl prints it, and a server-side
// dry run of a bind under the defer policy, which shows the held object and stores nothing.
package scenarios

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/restage-gate/restage-gate/e2e-tests/control-plane/servicebinding"
)

// boundCopy is the workload as the projector would write it with `service` bound: the object
// as stored, with the runtime's projection of a ServiceBinding of that name, in a file for
// kubectl.
func (a *app) boundCopy(service string) (*unstructured.Unstructured, string) {
	a.t.Helper()
	obj := a.object()
	var binding servicebinding.Binding
	binding.Name = service
	binding.Namespace = a.namespace
	binding.UID = types.UID("0f0e0d0c-0b0a-4098-8765-43210fedcba9")
	binding.Spec.Name = service
	binding.Spec.Workload = servicebinding.WorkloadReference{APIVersion: a.kind.apiVersion(), Kind: a.kind.Kind, Name: a.name}
	binding.Status.Binding = &servicebinding.SecretReference{Name: service}
	binding.Default()
	if err := servicebinding.Project(obj, binding); err != nil {
		a.t.Fatal(err)
	}
	if !servicebinding.IsProjected(obj, binding) {
		a.t.Fatalf("the projector did not project %s into %s", service, a.name)
	}
	return obj, writeManifest(a.t, obj)
}

func TestRejectMode(t *testing.T) {
	reject := policyWithSettings(t, "policy.yaml", func(policy map[string]any) {
		policy["spec"].(map[string]any)["mutating"] = false
		policy["spec"].(map[string]any)["settings"] = map[string]any{"mode": "reject"}
	})
	install(t, reject)
	t.Run("kubectl prints the refusal of a bind, naming the workload, the binding and how to apply it", func(t *testing.T) {
		eachKind(t, func(t *testing.T, k kind) {
			a := newApp(t, k)
			before := a.running()
			_, file := a.boundCopy("orders-db")
			out, err := a.kubectl("replace", "-f", file)
			if err == nil {
				t.Fatalf("kubectl replace of a bind succeeded in reject mode:\n%s", out)
			}
			for _, want := range []string{
				`admission webhook "clusterwide-restage-gate.kubewarden.admission" denied the request`,
				"restage-gate refused an update of " + k.Kind + " " + a.namespace + "/" + a.name,
				"service binding +orders-db",
				"would restart every pod (mode: reject)",
				"`kubectl rollout restart " + k.resourceName(a.name) + " -n " + a.namespace + "`",
			} {
				if !strings.Contains(out, want) {
					t.Fatalf("kubectl printed\n%s\nwhich does not say %q", out, want)
				}
			}
			a.settled("the refused bind")
			if n := a.running().replaced(before); n != 0 {
				t.Fatalf("a refused bind replaced %d pods", n)
			}
			if annotations := a.object().GetAnnotations(); annotations["restage-gate.io/pending"] != "" {
				t.Fatalf("a refused bind left markers: %v", annotations)
			}
		})
	})
}

func TestServerDryRun(t *testing.T) {
	install(t, "policy.yaml")
	t.Run("kubectl --dry-run=server of a bind shows the held object and stores nothing", func(t *testing.T) {
		eachKind(t, func(t *testing.T, k kind) {
			a := newApp(t, k)
			stored := a.object()
			_, file := a.boundCopy("orders-db")
			out, warnings, err := a.kubectlSplit("replace", "--dry-run=server", "-o", "json", "-f", file)
			if err != nil {
				t.Fatalf("kubectl replace --dry-run=server: %v\n%s%s", err, warnings, out)
			}
			if !strings.Contains(warnings, "Warning: restage-gate: "+k.Kind+" rollout held") {
				t.Fatalf("kubectl printed no warning that the rollout is held:\n%s", warnings)
			}
			var answered unstructured.Unstructured
			if err := json.Unmarshal([]byte(out), &answered.Object); err != nil {
				t.Fatalf("kubectl printed no object: %v\n%s", err, out)
			}
			if answered.GetLabels()[heldLabel] != "true" || !k.holds(&answered) {
				t.Fatalf("the dry run's answer is not held: labels %v", answered.GetLabels())
			}
			after := a.object()
			if after.GetResourceVersion() != stored.GetResourceVersion() {
				t.Fatalf("the dry run stored a change: resourceVersion %s → %s", stored.GetResourceVersion(), after.GetResourceVersion())
			}
			if after.GetLabels()[heldLabel] != "" {
				t.Fatal("the dry run left the held marker on the stored object")
			}
		})
	})
}
