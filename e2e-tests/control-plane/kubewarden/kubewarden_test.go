// Tests of package kubewarden against the repository's own manifests (policy.yaml, guard.yaml,
// monitor.yaml) and small manifests written here for what those leave untouched.
package kubewarden

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The repository's manifests, from this package's directory.
var (
	deferManifest   = filepath.Join("..", "..", "..", "policy.yaml")
	guardManifest   = filepath.Join("..", "..", "..", "guard.yaml")
	monitorManifest = filepath.Join("..", "..", "..", "monitor.yaml")
)

const (
	serverURL = "https://127.0.0.1:8443"
	caPEM     = "-----BEGIN CERTIFICATE-----\nnot parsed here\n-----END CERTIFICATE-----\n"
)

func readPolicies(t *testing.T, paths ...string) []Policy {
	t.Helper()
	policies, err := ReadPolicies(paths...)
	if err != nil {
		t.Fatalf("ReadPolicies(%v): %v", paths, err)
	}
	return policies
}

// writeManifest writes text to a file of its own and returns the file's path.
func writeManifest(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifest.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// specField is one field of a manifest's spec, read without this package, as JSON.
func specField(t *testing.T, path, name string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var document struct {
		Spec map[string]any `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &document); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	value, ok := document.Spec[name]
	if !ok {
		t.Fatalf("%s: no spec.%s", path, name)
	}
	return value
}

// asJSON is v encoded and decoded again, so that typed and untyped values compare.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDeferPolicyBecomesTheMutatingWebhookConfigurationTheControllerNamesForIt(t *testing.T) {
	policies := readPolicies(t, deferManifest)
	if len(policies) != 1 || policies[0].Name != "restage-gate" {
		t.Fatalf("policies of %s: %+v, want the one named restage-gate", deferManifest, policies)
	}
	if id := policies[0].ID(); id != "clusterwide-restage-gate" {
		t.Errorf("policy id %q, want clusterwide-restage-gate", id)
	}

	mutating, validating := WebhookConfigurations(policies, serverURL, []byte(caPEM))
	if len(mutating) != 1 || len(validating) != 0 {
		t.Fatalf("%d mutating and %d validating configurations, want 1 mutating", len(mutating), len(validating))
	}
	configuration := mutating[0]
	if configuration.Name != "clusterwide-restage-gate" {
		t.Errorf("configuration name %q, want clusterwide-restage-gate", configuration.Name)
	}
	if got := configuration.Labels; !reflect.DeepEqual(got, map[string]string{"app.kubernetes.io/part-of": "kubewarden"}) {
		t.Errorf("labels %v", got)
	}
	wantAnnotations := map[string]string{"kubewardenPolicyName": "restage-gate", "kubewardenPolicyNamespace": ""}
	if got := configuration.Annotations; !reflect.DeepEqual(got, wantAnnotations) {
		t.Errorf("annotations %v, want %v", got, wantAnnotations)
	}
	if len(configuration.Webhooks) != 1 {
		t.Fatalf("%d webhooks, want 1", len(configuration.Webhooks))
	}
	webhook := configuration.Webhooks[0]
	if webhook.Name != "clusterwide-restage-gate.kubewarden.admission" {
		t.Errorf("webhook name %q", webhook.Name)
	}

	if got, want := asJSON(t, webhook.Rules), specField(t, deferManifest, "rules"); !reflect.DeepEqual(got, want) {
		t.Errorf("rules %v, want the file's %v", got, want)
	}
	if want := specField(t, deferManifest, "failurePolicy"); want != "Ignore" {
		t.Fatalf("%s: failurePolicy %v; this test expects the file's Ignore", deferManifest, want)
	}
	if webhook.FailurePolicy == nil || *webhook.FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy %v, want Ignore", webhook.FailurePolicy)
	}

	url := webhook.ClientConfig.URL
	if url == nil || !strings.HasPrefix(*url, serverURL+"/") || !strings.HasSuffix(*url, "/validate/"+policies[0].ID()) {
		t.Errorf("client URL %v, want %s/validate/%s", url, serverURL, policies[0].ID())
	}
	if webhook.ClientConfig.Service != nil {
		t.Errorf("client service %v, want none beside the URL", webhook.ClientConfig.Service)
	}
	if string(webhook.ClientConfig.CABundle) != caPEM {
		t.Errorf("CA bundle %q", webhook.ClientConfig.CABundle)
	}
	if webhook.SideEffects == nil || *webhook.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("sideEffects %v, want None", webhook.SideEffects)
	}
	if webhook.TimeoutSeconds == nil || *webhook.TimeoutSeconds != 10 {
		t.Errorf("timeoutSeconds %v, want the CRD's default 10", webhook.TimeoutSeconds)
	}
	if !reflect.DeepEqual(webhook.AdmissionReviewVersions, []string{"v1"}) {
		t.Errorf("admissionReviewVersions %v", webhook.AdmissionReviewVersions)
	}
	if webhook.MatchPolicy != nil || webhook.ReinvocationPolicy != nil || webhook.ObjectSelector != nil || webhook.MatchConditions != nil {
		t.Errorf("matchPolicy %v, reinvocationPolicy %v, objectSelector %v, matchConditions %v: want all unset, as the controller leaves them",
			webhook.MatchPolicy, webhook.ReinvocationPolicy, webhook.ObjectSelector, webhook.MatchConditions)
	}
	// The controller's own namespace left out, then the policy's own expressions.
	wantSelector := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kubewarden"},
	}}}
	if own := policies[0].NamespaceSelector; own != nil {
		wantSelector.MatchExpressions = append(wantSelector.MatchExpressions, own.MatchExpressions...)
	}
	if !reflect.DeepEqual(webhook.NamespaceSelector, wantSelector) {
		t.Errorf("namespaceSelector %+v, want the controller's namespace left out, then the policy's %+v", webhook.NamespaceSelector, policies[0].NamespaceSelector)
	}
}

func TestGuardAndMonitorBecomeValidatingWebhookConfigurations(t *testing.T) {
	policies := readPolicies(t, guardManifest, monitorManifest)
	mutating, validating := WebhookConfigurations(policies, serverURL, []byte(caPEM))
	if len(mutating) != 0 || len(validating) != 2 {
		t.Fatalf("%d mutating and %d validating configurations, want 2 validating", len(mutating), len(validating))
	}
	for i, want := range []string{"clusterwide-restage-gate-guard", "clusterwide-restage-gate-monitor"} {
		configuration := validating[i]
		if configuration.Name != want {
			t.Errorf("configuration %d named %q, want %q", i, configuration.Name, want)
		}
		webhook := configuration.Webhooks[0]
		if webhook.Name != want+".kubewarden.admission" {
			t.Errorf("%s: webhook name %q", want, webhook.Name)
		}
		if webhook.ClientConfig.URL == nil || *webhook.ClientConfig.URL != serverURL+"/validate/"+want {
			t.Errorf("%s: client URL %v", want, webhook.ClientConfig.URL)
		}
		if webhook.FailurePolicy == nil || *webhook.FailurePolicy != admissionregistrationv1.Ignore {
			t.Errorf("%s: failurePolicy %v, want the file's Ignore", want, webhook.FailurePolicy)
		}
	}
	if policies[1].Mode != ModeMonitor || policies[0].Mode != ModeProtect {
		t.Errorf("modes %q and %q, want protect for the guard and monitor for the monitor", policies[0].Mode, policies[1].Mode)
	}
}

func TestFieldsLeftOutGetTheClusterDefaults(t *testing.T) {
	path := writeManifest(t, `
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: bare
spec:
  module: registry://example.test/bare:v1
  mutating: false
  rules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      resources: ["deployments"]
      operations: ["UPDATE"]
`)
	policies := readPolicies(t, path)
	if len(policies) != 1 {
		t.Fatalf("%d policies, want 1", len(policies))
	}
	p := policies[0]
	if p.Mode != ModeProtect || p.PolicyServer != "default" || !p.BackgroundAudit {
		t.Errorf("mode %q, policyServer %q, backgroundAudit %v: want protect, default, true", p.Mode, p.PolicyServer, p.BackgroundAudit)
	}
	if p.TimeoutSeconds == nil || *p.TimeoutSeconds != 10 {
		t.Errorf("timeoutSeconds %v, want 10", p.TimeoutSeconds)
	}
	if p.Settings != nil || p.FailurePolicy != nil || p.SideEffects != nil || p.TimeoutEvalSeconds != nil {
		t.Errorf("settings %s, failurePolicy %v, sideEffects %v, timeoutEvalSeconds %v: want all unset",
			p.Settings, p.FailurePolicy, p.SideEffects, p.TimeoutEvalSeconds)
	}

	_, validating := WebhookConfigurations(policies, serverURL, nil)
	webhook := validating[0].Webhooks[0]
	if webhook.FailurePolicy != nil {
		t.Errorf("failurePolicy %v, want unset for the API server to make Fail", *webhook.FailurePolicy)
	}
	if webhook.SideEffects == nil || *webhook.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("sideEffects %v, want the controller's None", webhook.SideEffects)
	}
	if webhook.TimeoutSeconds == nil || *webhook.TimeoutSeconds != 10 {
		t.Errorf("timeoutSeconds %v, want 10", webhook.TimeoutSeconds)
	}
}

func TestFieldsTheFileSetsAreKept(t *testing.T) {
	policies := readPolicies(t, deferManifest, monitorManifest)
	deferPolicy, monitor := policies[0], policies[1]
	if deferPolicy.BackgroundAudit || monitor.BackgroundAudit {
		t.Errorf("backgroundAudit %v and %v, want the files' false", deferPolicy.BackgroundAudit, monitor.BackgroundAudit)
	}
	if !deferPolicy.Mutating || monitor.Mutating {
		t.Errorf("mutating %v and %v, want true and false", deferPolicy.Mutating, monitor.Mutating)
	}
	if deferPolicy.Module != "registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0" {
		t.Errorf("module %q", deferPolicy.Module)
	}
	if got, want := asJSON(t, deferPolicy.Settings), specField(t, deferManifest, "settings"); !reflect.DeepEqual(got, want) {
		t.Errorf("settings %v, want the file's %v", got, want)
	}
}

func TestPoliciesYmlHasThePolicyServersKeysAndFields(t *testing.T) {
	policies := readPolicies(t, deferManifest, guardManifest, monitorManifest)
	module := "/policies/restage-gate.wasm"
	data, err := PolicyServerConfig(policies, func(Policy) string { return module })
	if err != nil {
		t.Fatal(err)
	}

	// The file is YAML to the policy-server; read it as YAML.
	var file map[string]map[string]any
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatalf("policies.yml does not read back: %v\n%s", err, data)
	}
	ids := make([]string, 0, len(file))
	for id := range file {
		ids = append(ids, id)
	}
	want := map[string]struct {
		mode     string
		mutating bool
		settings map[string]any
	}{
		"clusterwide-restage-gate":         {"protect", true, map[string]any{"mode": "defer"}},
		"clusterwide-restage-gate-guard":   {"protect", false, map[string]any{"mode": "reject"}},
		"clusterwide-restage-gate-monitor": {"monitor", false, map[string]any{"mode": "reject"}},
	}
	if len(file) != len(want) {
		t.Fatalf("policy ids %v, want %d", ids, len(want))
	}
	for id, w := range want {
		entry, ok := file[id]
		if !ok {
			t.Errorf("no policy %q among %v", id, ids)
			continue
		}
		keys := make([]string, 0, len(entry))
		for key := range entry {
			keys = append(keys, key)
		}
		wantKeys := []string{"allowedToMutate", "hostCapabilities", "module", "namespacedName", "policyMode", "settings"}
		if !sameSet(keys, wantKeys) {
			t.Errorf("%s: keys %v, want %v", id, keys, wantKeys)
		}
		if entry["module"] != "file://"+module {
			t.Errorf("%s: module %v, want file://%s", id, entry["module"], module)
		}
		if entry["policyMode"] != w.mode || entry["allowedToMutate"] != w.mutating {
			t.Errorf("%s: policyMode %v, allowedToMutate %v: want %s, %v", id, entry["policyMode"], entry["allowedToMutate"], w.mode, w.mutating)
		}
		if !reflect.DeepEqual(entry["settings"], asJSON(t, w.settings)) {
			t.Errorf("%s: settings %v, want %v", id, entry["settings"], w.settings)
		}
		if !reflect.DeepEqual(entry["hostCapabilities"], []any{"*"}) {
			t.Errorf("%s: hostCapabilities %v", id, entry["hostCapabilities"])
		}
		name := strings.TrimPrefix(id, "clusterwide-")
		if !reflect.DeepEqual(entry["namespacedName"], map[string]any{"Namespace": "", "Name": name}) {
			t.Errorf("%s: namespacedName %v", id, entry["namespacedName"])
		}
	}
}

func TestPoliciesYmlIsTheControllersEncodingByteForByte(t *testing.T) {
	policies := readPolicies(t, deferManifest)
	bare := readPolicies(t, writeManifest(t, `
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: bare
spec:
  module: file:///already/a/url.wasm
  mutating: false
  mode: monitor
  timeoutEvalSeconds: 3
  message: held
  rules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      resources: ["pods"]
      operations: ["CREATE"]
`))
	data, err := PolicyServerConfig(append(policies, bare...), func(p Policy) string {
		if p.Name == "bare" {
			return p.Module
		}
		return "/m/policy.wasm"
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"clusterwide-bare":{"namespacedName":{"Namespace":"","Name":"bare"},"module":"file:///already/a/url.wasm","policyMode":"monitor","allowedToMutate":false,"settings":null,"message":"held","timeoutEvalSeconds":3,"hostCapabilities":["*"]},` +
		`"clusterwide-restage-gate":{"namespacedName":{"Namespace":"","Name":"restage-gate"},"module":"file:///m/policy.wasm","policyMode":"protect","allowedToMutate":true,"settings":{"mode":"defer"},"hostCapabilities":["*"]}}`
	if string(data) != want {
		t.Errorf("policies.yml\n%s\nwant\n%s", data, want)
	}
}

func TestARelativeModulePathIsRefused(t *testing.T) {
	policies := readPolicies(t, deferManifest)
	_, err := PolicyServerConfig(policies, func(Policy) string { return "policy.wasm" })
	if err == nil || !strings.Contains(err.Error(), "absolute") {
		t.Errorf("error %v, want one saying the path must be absolute", err)
	}
}

func TestDocumentsOtherThanClusterAdmissionPoliciesAreSkipped(t *testing.T) {
	path := writeManifest(t, `
# comments only
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-policy
data:
  mutating: "true"
---
apiVersion: policies.kubewarden.io/v1
kind: AdmissionPolicy
metadata:
  name: namespaced
  namespace: default
spec:
  module: registry://example.test/p:v1
  mutating: false
  rules: []
---
apiVersion: policies.kubewarden.io/v1alpha2
kind: ClusterAdmissionPolicy
metadata:
  name: older-version
spec:
  module: registry://example.test/p:v1
---
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: kept
spec:
  module: registry://example.test/p:v1
  mutating: true
  rules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      resources: ["deployments"]
      operations: ["UPDATE"]
`)
	policies := readPolicies(t, path)
	if len(policies) != 1 || policies[0].Name != "kept" {
		t.Errorf("policies %+v, want only the one named kept", policies)
	}
}

func TestAManifestAClusterWouldRefuseIsAnErrorNamingTheField(t *testing.T) {
	for _, c := range []struct {
		name, spec, field string
	}{
		{"module left out", "mutating: true\n  rules: " + anyRule, "spec.module"},
		{"mutating left out", "module: registry://example.test/p:v1\n  rules: " + anyRule, "spec.mutating"},
		{"no rules", "module: registry://example.test/p:v1\n  mutating: true\n  rules: []", "spec.rules"},
		{"unknown mode", "module: registry://example.test/p:v1\n  mutating: true\n  mode: enforce\n  rules: " + anyRule, "spec.mode"},
		{"misspelt field", "module: registry://example.test/p:v1\n  mutating: true\n  failurepolicy: Ignore\n  rules: " + anyRule, "failurepolicy"},
		{"timeout out of range", "module: registry://example.test/p:v1\n  mutating: true\n  timeoutSeconds: 31\n  rules: " + anyRule, "spec.timeoutSeconds"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeManifest(t, "apiVersion: policies.kubewarden.io/v1\nkind: ClusterAdmissionPolicy\nmetadata:\n  name: broken\nspec:\n  "+c.spec+"\n")
			_, err := ReadPolicies(path)
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), path) {
				t.Errorf("error %v, want one naming %s and the file", err, c.field)
			}
		})
	}
}

const anyRule = `[{apiGroups: ["apps"], apiVersions: ["v1"], resources: ["deployments"], operations: ["UPDATE"]}]`

func TestOnlyTheSelectorsMatchExpressionsJoinTheControllersNamespaceExclusion(t *testing.T) {
	policy := Policy{
		Name: "selective",
		NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{"restage-gate.io/enabled": "true"},
			MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"apps"},
			}},
		},
	}
	_, validating := Options{ControllerNamespace: "kw"}.WebhookConfigurations([]Policy{policy}, serverURL, nil)
	want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kw"}},
		{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"apps"}},
	}}
	if got := validating[0].Webhooks[0].NamespaceSelector; !reflect.DeepEqual(got, want) {
		t.Errorf("namespaceSelector %+v, want %+v", got, want)
	}

	policy.AllowInsideAdmissionControllerNamespace = true
	_, validating = Options{ControllerNamespace: "kw"}.WebhookConfigurations([]Policy{policy}, serverURL, nil)
	if got := validating[0].Webhooks[0].NamespaceSelector; !reflect.DeepEqual(got, policy.NamespaceSelector) {
		t.Errorf("namespaceSelector %+v, want the policy's own when it allows the controller's namespace", got)
	}
}

func TestRenamingMovesOnlyTheConfigurationName(t *testing.T) {
	policies := readPolicies(t, deferManifest, guardManifest)
	options := Options{NamePrefix: "zz-", Names: map[string]string{"restage-gate-guard": "aa-guard"}}
	mutating, validating := options.WebhookConfigurations(policies, serverURL, nil)
	if mutating[0].Name != "zz-clusterwide-restage-gate" || validating[0].Name != "aa-guard" {
		t.Errorf("names %q and %q, want zz-clusterwide-restage-gate and aa-guard", mutating[0].Name, validating[0].Name)
	}
	webhook := mutating[0].Webhooks[0]
	if webhook.Name != "clusterwide-restage-gate.kubewarden.admission" || *webhook.ClientConfig.URL != serverURL+"/validate/clusterwide-restage-gate" {
		t.Errorf("webhook %q at %q: want the policy id kept", webhook.Name, *webhook.ClientConfig.URL)
	}
	if mutating[0].Annotations["kubewardenPolicyName"] != "restage-gate" {
		t.Errorf("annotations %v: want the policy's name kept", mutating[0].Annotations)
	}
}

func TestChangingAConfigurationLeavesThePolicyAlone(t *testing.T) {
	policies := readPolicies(t, deferManifest)
	mutating, _ := WebhookConfigurations(policies, serverURL, nil)
	webhook := mutating[0].Webhooks[0]
	webhook.Rules[0].Operations[0] = admissionregistrationv1.Delete
	*webhook.FailurePolicy = admissionregistrationv1.Fail
	*webhook.TimeoutSeconds = 30
	if policies[0].Rules[0].Operations[0] != admissionregistrationv1.Update || *policies[0].FailurePolicy != admissionregistrationv1.Ignore || *policies[0].TimeoutSeconds != 10 {
		t.Errorf("policy changed through its configuration: %+v", policies[0])
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
