// Tests of Project and Unproject against what the real runtime wrote on Korifi v0.14 and against
// the runtime's own projector test cases.

package servicebinding

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestProjectingUserProvidedBindingYieldsTheRuntimesBoundTemplate(t *testing.T) {
	workload := referenceWorkload(t, "statefulset-0-unbound.json")
	if err := Project(workload, referenceBinding(t, "servicebinding-user-provided.json")); err != nil {
		t.Fatal(err)
	}
	want := stored(t, referenceWorkload(t, "statefulset-1-bound-upsi.json"))
	got := stored(t, workload)
	requireSame(t, "spec.template", at(got, "spec", "template"), at(want, "spec", "template"))
	requireSame(t, "metadata.annotations", at(got, "metadata", "annotations"), at(want, "metadata", "annotations"))
}

func TestRebindingToTheManagedServiceYieldsTheRuntimesReboundTemplate(t *testing.T) {
	workload := referenceWorkload(t, "statefulset-0-unbound.json")
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	if err := Project(workload, upsi); err != nil {
		t.Fatal(err)
	}
	if err := Unproject(workload, upsi); err != nil {
		t.Fatal(err)
	}
	if err := Project(workload, referenceBinding(t, "servicebinding-managed-orders-db.json")); err != nil {
		t.Fatal(err)
	}
	want := stored(t, referenceWorkload(t, "statefulset-2-rebound-managed.json"))
	got := stored(t, workload)
	requireSame(t, "spec.template", at(got, "spec", "template"), at(want, "spec", "template"))
	requireSame(t, "metadata.annotations", at(got, "metadata", "annotations"), at(want, "metadata", "annotations"))
}

func TestProjectingTwiceEqualsProjectingOnce(t *testing.T) {
	bindings := []Binding{
		referenceBinding(t, "servicebinding-user-provided.json"),
		typedEnvBinding(),
	}
	workloads := map[string]func() *unstructured.Unstructured{
		"korifi statefulset": func() *unstructured.Unstructured { return referenceWorkload(t, "statefulset-0-unbound.json") },
		"deployment with init container": func() *unstructured.Unstructured {
			return workloadFromJSON(t, deploymentWithInitContainer)
		},
		"argo rollout": func() *unstructured.Unstructured { return workloadFromJSON(t, argoRollout) },
	}
	for name, fresh := range workloads {
		for _, b := range bindings {
			once := fresh()
			b.Spec.Workload = WorkloadReference{APIVersion: once.GetAPIVersion(), Kind: once.GetKind(), Name: once.GetName()}
			if err := Project(once, b); err != nil {
				t.Fatal(err)
			}
			if !IsProjected(once, b) {
				t.Fatalf("%s: binding %s not projected", name, b.Name)
			}
			twice := once.DeepCopy()
			if err := Project(twice, b); err != nil {
				t.Fatal(err)
			}
			requireSame(t, name+" projected twice", generic(t, twice), generic(t, once))
			if reflect.DeepEqual(generic(t, once), generic(t, fresh())) {
				t.Fatalf("%s: projecting %s changed nothing", name, b.Name)
			}
		}
	}
}

func TestUnprojectingRestoresTheUnboundTemplateExceptServiceBindingRoot(t *testing.T) {
	unbound := referenceWorkload(t, "statefulset-0-unbound.json")
	workload := unbound.DeepCopy()
	b := referenceBinding(t, "servicebinding-user-provided.json")
	if err := Project(workload, b); err != nil {
		t.Fatal(err)
	}
	if err := Unproject(workload, b); err != nil {
		t.Fatal(err)
	}
	if IsProjected(workload, b) {
		t.Fatal("mapping annotation left behind")
	}

	// the runtime never removes SERVICE_BINDING_ROOT; the rebound reference still has it
	want := stored(t, unbound)
	container := at(want, "spec", "template", "spec", "containers").([]interface{})[0].(map[string]interface{})
	container["env"] = append(container["env"].([]interface{}),
		map[string]interface{}{"name": ServiceBindingRootEnv, "value": DefaultServiceBindingRoot})
	got := stored(t, workload)
	requireSame(t, "spec.template", at(got, "spec", "template"), at(want, "spec", "template"))
	requireSame(t, "metadata.annotations", at(got, "metadata", "annotations"), at(want, "metadata", "annotations"))
}

func TestUnprojectingWritesEmptyListsAndMapsAsTheRuntimeDoes(t *testing.T) {
	workload := workloadFromJSON(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w"},
		"spec":{"template":{"spec":{"containers":[{"name":"app"}]}}}}`)
	b := directBinding("b", "uid-1", "secret-1")
	b.Spec.Workload = WorkloadReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "w"}
	if err := Unproject(workload, b); err != nil {
		t.Fatal(err)
	}
	want := generic(t, workloadFromJSON(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w","annotations":{}},
		"spec":{"template":{"metadata":{"annotations":{}},"spec":{"volumes":[],"containers":[{"name":"app","env":[],"volumeMounts":[]}]}}}}`))
	requireSame(t, "unprojected deployment", generic(t, workload), want)
}

func TestProjectingEnvTypeAndProviderFollowsTheRuntimesOrder(t *testing.T) {
	workload := workloadFromJSON(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"my-workload"},
		"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"ZED","value":"1"},{"name":"ALPHA","value":"2"}]}]}}}}`)
	if err := Project(workload, typedEnvBinding()); err != nil {
		t.Fatal(err)
	}
	uid := "26894874-4719-4802-8f43-8ceed127b4c2"
	typePath := "metadata.annotations['projector.servicebinding.io/type-" + uid + "']"
	providerPath := "metadata.annotations['projector.servicebinding.io/provider-" + uid + "']"
	want := generic(t, workloadFromJSON(t, `{"apiVersion":"apps/v1","kind":"Deployment",
		"metadata":{"name":"my-workload","annotations":{"projector.servicebinding.io/mapping-`+uid+`":`+quote(PodSpecableMapping)+`}},
		"spec":{"template":{
			"metadata":{"annotations":{
				"projector.servicebinding.io/secret-`+uid+`":"my-secret",
				"projector.servicebinding.io/type-`+uid+`":"my-type",
				"projector.servicebinding.io/provider-`+uid+`":"my-provider"}},
			"spec":{
				"volumes":[{"name":"servicebinding-`+uid+`","projected":{"defaultMode":420,"sources":[
					{"secret":{"name":"my-secret"}},
					{"downwardAPI":{"items":[{"path":"type","fieldRef":{"fieldPath":"`+typePath+`"}}]}},
					{"downwardAPI":{"items":[{"path":"provider","fieldRef":{"fieldPath":"`+providerPath+`"}}]}}]}}],
				"containers":[{"name":"app",
					"env":[
						{"name":"ZED","value":"1"},
						{"name":"ALPHA","value":"2"},
						{"name":"SERVICE_BINDING_ROOT","value":"/bindings"},
						{"name":"BAR","valueFrom":{"secretKeyRef":{"name":"my-secret","key":"bar"}}},
						{"name":"FOO","valueFrom":{"secretKeyRef":{"name":"my-secret","key":"foo"}}},
						{"name":"PROVIDER","valueFrom":{"fieldRef":{"fieldPath":"`+providerPath+`"}}},
						{"name":"TYPE","valueFrom":{"fieldRef":{"fieldPath":"`+typePath+`"}}}],
					"volumeMounts":[{"name":"servicebinding-`+uid+`","readOnly":true,"mountPath":"/bindings/my-binding"}]}]}}}}`))
	requireSame(t, "projected deployment", generic(t, workload), want)
}

func TestProjectingKeepsOtherBindingsAndSortsProjectedEntriesByName(t *testing.T) {
	workload := workloadFromJSON(t, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"w"},
		"spec":{"template":{"spec":{
			"volumes":[{"name":"zz-user","emptyDir":{}},{"name":"aa-user","emptyDir":{}}],
			"containers":[{"name":"app","env":[{"name":"SERVICE_BINDING_ROOT","value":"/custom"}],
				"volumeMounts":[{"name":"zz-user","mountPath":"/z"},{"name":"aa-user","mountPath":"/a"}]}]}}}}`)
	second := directBinding("second", "bbbb", "secret-b")
	second.Spec.Workload = WorkloadReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "w"}
	first := directBinding("first", "aaaa", "secret-a")
	first.Spec.Workload = second.Spec.Workload
	for _, b := range []Binding{second, first} {
		if err := Project(workload, b); err != nil {
			t.Fatal(err)
		}
	}
	spec := at(generic(t, workload), "spec", "template", "spec").(map[string]interface{})
	if got := names(spec["volumes"]); strings.Join(got, ",") != "zz-user,aa-user,servicebinding-aaaa,servicebinding-bbbb" {
		t.Fatalf("volumes in order %v", got)
	}
	container := spec["containers"].([]interface{})[0].(map[string]interface{})
	if got := names(container["volumeMounts"]); strings.Join(got, ",") != "zz-user,aa-user,servicebinding-aaaa,servicebinding-bbbb" {
		t.Fatalf("volume mounts in order %v", got)
	}
	// the container's own root decides the mount path, and no second root is added
	mounts := container["volumeMounts"].([]interface{})
	if got := mounts[2].(map[string]interface{})["mountPath"]; got != "/custom/first" {
		t.Fatalf("mount path %v", got)
	}
	if got := names(container["env"]); strings.Join(got, ",") != "SERVICE_BINDING_ROOT" {
		t.Fatalf("env %v", got)
	}
	if err := Unproject(workload, second); err != nil {
		t.Fatal(err)
	}
	spec = at(generic(t, workload), "spec", "template", "spec").(map[string]interface{})
	if got := names(spec["volumes"]); strings.Join(got, ",") != "zz-user,aa-user,servicebinding-aaaa" {
		t.Fatalf("after unprojecting one binding, volumes %v", got)
	}
}

func TestProjectingOnlyIntoTheNamedContainers(t *testing.T) {
	workload := workloadFromJSON(t, deploymentWithInitContainer)
	b := directBinding("b", "uid-c", "s")
	b.Spec.Workload = WorkloadReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "my-workload", Containers: []string{"app"}}
	if err := Project(workload, b); err != nil {
		t.Fatal(err)
	}
	spec := at(generic(t, workload), "spec", "template", "spec").(map[string]interface{})
	initc := spec["initContainers"].([]interface{})[0].(map[string]interface{})
	if len(initc["volumeMounts"].([]interface{})) != 0 || len(initc["env"].([]interface{})) != 0 {
		t.Fatalf("init container was bound: %v", initc)
	}
	app := spec["containers"].([]interface{})[0].(map[string]interface{})
	if got := names(app["volumeMounts"]); strings.Join(got, ",") != "servicebinding-uid-c" {
		t.Fatalf("app container mounts %v", got)
	}
}

func TestProjectingNothingWithoutSecretOrWhenTheBindingTargetsAnotherWorkload(t *testing.T) {
	upsi := referenceBinding(t, "servicebinding-user-provided.json")
	noSecret := upsi
	noSecret.Status.Binding = nil
	otherApp := upsi
	otherApp.Spec.Workload.Selector = otherApp.Spec.Workload.Selector.DeepCopy()
	otherApp.Spec.Workload.Selector.MatchLabels["korifi.cloudfoundry.org/app-guid"] = "another-app"
	for name, b := range map[string]Binding{"no secret": noSecret, "other app": otherApp} {
		workload := referenceWorkload(t, "statefulset-0-unbound.json")
		if err := Project(workload, b); err != nil {
			t.Fatal(err)
		}
		if IsProjected(workload, b) {
			t.Fatalf("%s: projected", name)
		}
		if vols := at(generic(t, workload), "spec", "template", "spec", "volumes").([]interface{}); len(vols) != 0 {
			t.Fatalf("%s: volumes %v", name, vols)
		}
	}
}

func TestProjectingAgainAfterTheSecretRotatesReplacesTheOldSecret(t *testing.T) {
	workload := workloadFromJSON(t, deploymentWithInitContainer)
	b := typedEnvBinding()
	if err := Project(workload, b); err != nil {
		t.Fatal(err)
	}
	b.Status.Binding = &SecretReference{Name: "rotated"}
	if err := Project(workload, b); err != nil {
		t.Fatal(err)
	}
	text := show(generic(t, workload))
	if strings.Contains(text, `"my-secret"`) || !strings.Contains(text, `"rotated"`) {
		t.Fatalf("secret not rotated: %s", text)
	}
}

func TestUnprojectRefusesAMappingItDoesNotKnow(t *testing.T) {
	b := directBinding("b", "uid-m", "s")
	workload := workloadFromJSON(t, `{"apiVersion":"example.com/v1","kind":"Custom","metadata":{"name":"w","annotations":{
		"projector.servicebinding.io/mapping-uid-m":"{\"versions\":[{\"version\":\"*\",\"annotations\":\".spec.podTemplate.metadata.annotations\"}]}"}}}`)
	if err := Unproject(workload, b); err == nil {
		t.Fatal("unprojected with an unknown mapping")
	}
}

func names(list interface{}) []string {
	var out []string
	items, _ := list.([]interface{})
	for _, item := range items {
		if m, ok := item.(map[string]interface{}); ok {
			out = append(out, m["name"].(string))
		}
	}
	return out
}

func quote(s string) string {
	return show(s)
}

func directBinding(name, uid, secret string) Binding {
	b := Binding{}
	b.Name = name
	b.Namespace = "ns"
	b.UID = types.UID(uid)
	b.Spec.Service = ServiceReference{APIVersion: "v1", Kind: "Secret", Name: secret}
	b.Status.Binding = &SecretReference{Name: secret}
	return b
}

// typedEnvBinding is the runtime's test binding with env, type and provider.
func typedEnvBinding() Binding {
	b := directBinding("my-binding", "26894874-4719-4802-8f43-8ceed127b4c2", "my-secret")
	b.Spec.Type = "my-type"
	b.Spec.Provider = "my-provider"
	b.Spec.Env = []EnvMapping{{Name: "FOO", Key: "foo"}, {Name: "BAR", Key: "bar"}, {Name: "TYPE", Key: "type"}, {Name: "PROVIDER", Key: "provider"}}
	b.Spec.Workload = WorkloadReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "my-workload"}
	return b
}

const deploymentWithInitContainer = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"my-workload"},
	"spec":{"template":{"spec":{
		"initContainers":[{"name":"init","image":"busybox"}],
		"containers":[{"name":"app","image":"app","env":[{"name":"PORT","value":"8080"}]}]}}}}`

// argoRollout binds like a Deployment: the projector only looks at spec.template.
const argoRollout = `{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"name":"my-workload"},
	"spec":{"strategy":{"canary":{}},"template":{"metadata":{"labels":{"app":"x"}},"spec":{
		"containers":[{"name":"app","image":"app"}]}}}}`
