// Tests against the runtime's own release files: the CRDs load, and the webhook configuration
// matches the one config/servicebinding-runtime.yaml declares.

package servicebinding

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

func TestCRDsAreTheRuntimesServiceBindingAndClusterWorkloadResourceMapping(t *testing.T) {
	crds, err := CRDs()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"servicebindings.servicebinding.io":                 "ServiceBinding",
		"clusterworkloadresourcemappings.servicebinding.io": "ClusterWorkloadResourceMapping",
	}
	if len(crds) != len(want) {
		t.Fatalf("%d CRDs", len(crds))
	}
	for _, crd := range crds {
		kind, ok := want[crd.Name]
		if !ok || crd.Spec.Names.Kind != kind || crd.Spec.Group != Group {
			t.Fatalf("unexpected CRD %s (%s)", crd.Name, crd.Spec.Names.Kind)
		}
		storage := ""
		served := map[string]bool{}
		for _, v := range crd.Spec.Versions {
			served[v.Name] = v.Served
			if v.Storage {
				storage = v.Name
			}
		}
		if storage != "v1" || !served["v1"] || !served["v1beta1"] || !served["v1alpha3"] {
			t.Fatalf("%s versions: storage %q, served %v", crd.Name, storage, served)
		}
		// the bases carry no conversion webhook, so no service is needed to serve v1beta1
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy != "None" {
			t.Fatalf("%s converts by %s", crd.Name, crd.Spec.Conversion.Strategy)
		}
	}
	if crds[0].Spec.Names.Kind == crds[1].Spec.Names.Kind {
		t.Fatal("same kind twice")
	}
	if ServiceBindingsResource.Resource+"."+ServiceBindingsResource.Group != "servicebindings.servicebinding.io" {
		t.Fatal("resource name does not match the CRD")
	}
}

// releasedAdmissionProjector is the MutatingWebhookConfiguration in the runtime's release.
func releasedAdmissionProjector(t *testing.T) *admissionregistrationv1.MutatingWebhookConfiguration {
	t.Helper()
	dir, err := RuntimeDir()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "config", "servicebinding-runtime.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var head struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			t.Fatal(err)
		}
		if head.Kind == "MutatingWebhookConfiguration" && head.Metadata.Name == AdmissionProjectorName {
			out := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := yaml.UnmarshalStrict(doc, out); err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	t.Fatal("no admission projector in the release")
	return nil
}

func TestMutatingWebhookConfigurationMatchesTheRuntimesRelease(t *testing.T) {
	released := releasedAdmissionProjector(t)
	ca := []byte("ca bundle")
	ours := MutatingWebhookConfiguration("https://127.0.0.1:9443", ca, "")
	if ours.Name != released.Name {
		t.Fatalf("name %q, released %q", ours.Name, released.Name)
	}
	if _, ok := released.Annotations[DynamicRulesAnnotation]; !ok {
		t.Fatal("release lost its dynamic-rules annotation")
	}
	if _, ok := ours.Annotations[DynamicRulesAnnotation]; !ok {
		t.Fatal("no dynamic-rules annotation")
	}
	if len(ours.Webhooks) != 1 || len(released.Webhooks) != 1 {
		t.Fatalf("%d webhooks, released %d", len(ours.Webhooks), len(released.Webhooks))
	}
	o, r := ours.Webhooks[0], released.Webhooks[0]
	for what, pair := range map[string][2]interface{}{
		"name":                    {o.Name, r.Name},
		"admissionReviewVersions": {o.AdmissionReviewVersions, r.AdmissionReviewVersions},
		"failurePolicy":           {*o.FailurePolicy, *r.FailurePolicy},
		"reinvocationPolicy":      {*o.ReinvocationPolicy, *r.ReinvocationPolicy},
		"sideEffects":             {*o.SideEffects, *r.SideEffects},
		"namespaceSelector":       {o.NamespaceSelector, r.NamespaceSelector},
		"objectSelector":          {o.ObjectSelector, r.ObjectSelector},
		"matchPolicy":             {o.MatchPolicy, r.MatchPolicy},
		"timeoutSeconds":          {o.TimeoutSeconds, r.TimeoutSeconds},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s: %v, released %v", what, pair[0], pair[1])
		}
	}
	if r.ClientConfig.Service == nil || r.ClientConfig.Service.Path == nil || *r.ClientConfig.Service.Path != WebhookPath {
		t.Fatalf("released webhook path %+v", r.ClientConfig.Service)
	}
	if o.ClientConfig.Service != nil || o.ClientConfig.URL == nil || *o.ClientConfig.URL != "https://127.0.0.1:9443"+WebhookPath {
		t.Fatalf("client config %+v", o.ClientConfig)
	}
	if !bytes.Equal(o.ClientConfig.CABundle, ca) {
		t.Fatal("CA bundle not used")
	}

	wantRules := []admissionregistrationv1.RuleWithOperations{
		{
			Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"*"}, Resources: []string{"daemonsets", "deployments", "statefulsets"}},
		},
		{
			Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"argoproj.io"}, APIVersions: []string{"*"}, Resources: []string{"rollouts"}},
		},
	}
	if !reflect.DeepEqual(o.Rules, wantRules) {
		t.Fatalf("rules %+v", o.Rules)
	}

	renamed := MutatingWebhookConfiguration("https://127.0.0.1:9443/interceptor", nil, "zz-servicebinding-admission-projector")
	if renamed.Name != "zz-servicebinding-admission-projector" || *renamed.Webhooks[0].ClientConfig.URL != "https://127.0.0.1:9443/interceptor" {
		t.Fatalf("renamed: %s %s", renamed.Name, *renamed.Webhooks[0].ClientConfig.URL)
	}
}
