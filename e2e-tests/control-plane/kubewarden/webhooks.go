// The webhook configurations the Kubewarden controller registers with the API server for
// ClusterAdmissionPolicies, and the options a test needs to place them in the API server's
// order.
package kubewarden

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Labels, annotations and names the controller puts on its webhook configurations
// (internal/constants/constants.go).
const (
	// LabelPartOf is PartOfLabelKey; the controller finds its configurations by it.
	LabelPartOf = "app.kubernetes.io/part-of"
	// LabelPartOfValue is PartOfLabelValue.
	LabelPartOfValue = "kubewarden"
	// AnnotationPolicyName is WebhookConfigurationPolicyNameAnnotationKey.
	AnnotationPolicyName = "kubewardenPolicyName"
	// AnnotationPolicyNamespace is WebhookConfigurationPolicyNamespaceAnnotationKey: empty for a
	// ClusterAdmissionPolicy, which has no namespace.
	AnnotationPolicyNamespace = "kubewardenPolicyNamespace"
	// WebhookNameSuffix ends the name of the one webhook of each configuration.
	WebhookNameSuffix = ".kubewarden.admission"
	// ValidatePath starts the policy-server's path for a policy: ValidatePath + policy id, for
	// mutating and validating policies alike.
	ValidatePath = "/validate/"
	// DefaultControllerNamespace is the namespace the Kubewarden documentation installs the
	// controller and its policy-servers in; the Helm chart passes its release namespace as
	// --deployments-namespace (charts/kubewarden-controller/templates/deployment.yaml).
	DefaultControllerNamespace = "kubewarden"
	// namespaceNameLabel is the label the API server gives every namespace with its own name.
	namespaceNameLabel = "kubernetes.io/metadata.name"
)

// Options change what WebhookConfigurations makes. The zero value makes what the controller
// makes, installed in DefaultControllerNamespace.
//
// The API server calls mutating webhooks one after another, all before any validating webhook,
// in the order of their configurations' names: it sorts configurations with sort.SliceStable by
// metadata.name, a plain byte-wise string comparison, then takes each configuration's webhooks in
// their listed order (k8s.io/apiserver@v0.37.2 pkg/admission/configuration/mutating_webhook_manager.go,
// getMutatingWebhookConfigurations and MutatingWebhookConfigurationSorter.ByName; likewise
// validating_webhook_manager.go). Webhooks from manifest files given to the API server come before
// all of these (pkg/admission/plugin/webhook/generic/composite_webhook_source.go). The controller
// leaves reinvocationPolicy unset, which the API server defaults to Never, so a policy's webhook
// sees only what the mutating webhooks named before it have changed. Renaming a configuration is
// how a test puts restage-gate after (or before) another mutating webhook.
type Options struct {
	// ControllerNamespace is the namespace the controller runs its policy-servers in, which
	// every ClusterAdmissionPolicy's webhook leaves out unless the policy allows it;
	// DefaultControllerNamespace when empty.
	ControllerNamespace string
	// NamePrefix is put before every configuration's name (e.g. "zz-" to sort after the
	// others). The webhook's own name and URL keep the policy id.
	NamePrefix string
	// Names replaces the configuration name of the policy with that metadata.name; NamePrefix
	// is not added to a replaced name.
	Names map[string]string
}

// ConfigurationName is the metadata.name of the policy's webhook configuration: the policy id,
// as the controller names it (internal/controller/policy_subreconciler_webhook.go,
// reconcileMutatingWebhookConfiguration and reconcileValidatingWebhookConfiguration), unless
// the options rename it.
func (o Options) ConfigurationName(p Policy) string {
	if name, ok := o.Names[p.Name]; ok {
		return name
	}
	return o.NamePrefix + p.ID()
}

// WebhookConfigurations is Options{}.WebhookConfigurations.
func WebhookConfigurations(policies []Policy, serverURL string, caBundle []byte) (mutating []admissionregistrationv1.MutatingWebhookConfiguration, validating []admissionregistrationv1.ValidatingWebhookConfiguration) {
	return Options{}.WebhookConfigurations(policies, serverURL, caBundle)
}

// WebhookConfigurations makes, for each policy in order, the webhook configuration the
// controller creates for it once its policy-server is ready: a MutatingWebhookConfiguration for
// a mutating policy, a ValidatingWebhookConfiguration otherwise, whatever its mode
// (internal/controller/policy_subreconciler.go, reconcileWebhookConfiguration), holding one
// webhook (see Options.webhook). serverURL is the base URL of the policy-server (or its stand-in);
// caBundle is the PEM of the authority that signed its serving certificate.
func (o Options) WebhookConfigurations(policies []Policy, serverURL string, caBundle []byte) (mutating []admissionregistrationv1.MutatingWebhookConfiguration, validating []admissionregistrationv1.ValidatingWebhookConfiguration) {
	for _, p := range policies {
		w := o.webhook(p, serverURL, caBundle)
		if p.Mutating {
			mutating = append(mutating, admissionregistrationv1.MutatingWebhookConfiguration{
				TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingWebhookConfiguration"},
				ObjectMeta: o.objectMeta(p),
				Webhooks: []admissionregistrationv1.MutatingWebhook{{
					Name:                    w.Name,
					ClientConfig:            w.ClientConfig,
					Rules:                   w.Rules,
					FailurePolicy:           w.FailurePolicy,
					MatchPolicy:             w.MatchPolicy,
					NamespaceSelector:       w.NamespaceSelector,
					ObjectSelector:          w.ObjectSelector,
					SideEffects:             w.SideEffects,
					TimeoutSeconds:          w.TimeoutSeconds,
					AdmissionReviewVersions: w.AdmissionReviewVersions,
					MatchConditions:         w.MatchConditions,
					// ReinvocationPolicy is left unset, as reconcileMutatingWebhookConfiguration
					// leaves it: the API server makes it Never.
				}},
			})
			continue
		}
		validating = append(validating, admissionregistrationv1.ValidatingWebhookConfiguration{
			TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingWebhookConfiguration"},
			ObjectMeta: o.objectMeta(p),
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{w},
		})
	}
	return mutating, validating
}

// webhook is the one webhook of a policy's configuration, field by field as
// reconcileMutatingWebhookConfiguration and reconcileValidatingWebhookConfiguration set it
// (internal/controller/policy_subreconciler_webhook.go; the two set the same fields). Fields the
// controller leaves unset are left unset here, for the API server to default
// (k8s.io/kubernetes pkg/apis/admissionregistration/v1/defaults.go: failurePolicy Fail,
// matchPolicy Equivalent, objectSelector {}, a rule's scope "*").
func (o Options) webhook(p Policy, serverURL string, caBundle []byte) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		// `policy.GetUniqueName() + ".kubewarden.admission"`.
		Name: p.ID() + WebhookNameSuffix,
		// See webhookClientConfig.
		ClientConfig: webhookClientConfig(p, serverURL, caBundle),
		// `policy.GetRules()`: spec.rules as they are.
		Rules: rules(p),
		// `policy.GetFailurePolicy()`: spec.failurePolicy, unset when the policy leaves it out.
		FailurePolicy: clone(p.FailurePolicy),
		// `policy.GetMatchPolicy()`: spec.matchPolicy, unset when the policy leaves it out.
		MatchPolicy: clone(p.MatchPolicy),
		// `r.namespaceSelector(policy)`: see namespaceSelector.
		NamespaceSelector: o.namespaceSelector(p),
		// `policy.GetObjectSelector()`: spec.objectSelector.
		ObjectSelector: p.ObjectSelector.DeepCopy(),
		// `policy.GetSideEffects()`, or None when the policy has none.
		SideEffects: sideEffects(p),
		// `policy.GetTimeoutSeconds()`: spec.timeoutSeconds, defaulted by the CRD.
		TimeoutSeconds: clone(p.TimeoutSeconds),
		// `[]string{"v1"}`: the one version the policy-server speaks.
		AdmissionReviewVersions: []string{"v1"},
		// `policy.GetMatchConditions()`, set only when the API server's OpenAPI has the field
		// (internal/featuregates/featuregates.go, CheckAdmissionWebhookMatchConditions), as every
		// API server has had since the feature went GA, the harness's included.
		MatchConditions: matchConditions(p),
	}
}

// objectMeta is the configuration's name, labels and annotations, as
// reconcileMutatingWebhookConfiguration and reconcileValidatingWebhookConfiguration set them
// (internal/controller/policy_subreconciler_webhook.go).
func (o Options) objectMeta(p Policy) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:   o.ConfigurationName(p),
		Labels: map[string]string{LabelPartOf: LabelPartOfValue},
		Annotations: map[string]string{
			AnnotationPolicyName:      p.Name,
			AnnotationPolicyNamespace: "",
		},
	}
}

// webhookClientConfig points the webhook at the policy-server's path for the policy
// (internal/controller/policy_subreconciler_webhook.go, reconcile*WebhookConfiguration:
// `filepath.Join("/validate", policy.GetUniqueName())`) with caBundle as the CA to trust (there,
// the ca.crt of the kubewarden-ca Secret, internal/constants/constants.go, CARootCert). The
// controller names the policy-server's Service (policy-server-<name>, port 443, in its
// namespace); this uses a URL instead because the harness's webhook server listens on 127.0.0.1,
// outside any cluster network a Service could route to.
func webhookClientConfig(p Policy, serverURL string, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	url := strings.TrimSuffix(serverURL, "/") + ValidatePath + p.ID()
	return admissionregistrationv1.WebhookClientConfig{
		URL:      &url,
		CABundle: append([]byte(nil), caBundle...),
	}
}

// rules copies the policy's rules.
func rules(p Policy) []admissionregistrationv1.RuleWithOperations {
	if p.Rules == nil {
		return nil
	}
	out := make([]admissionregistrationv1.RuleWithOperations, len(p.Rules))
	for i := range p.Rules {
		p.Rules[i].DeepCopyInto(&out[i])
	}
	return out
}

// clone copies what a pointer field points to, so that changing a returned configuration does
// not change the policy it was made from.
func clone[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// sideEffects is the policy's, or None when it has none, which the API server would refuse to
// leave unset.
func sideEffects(p Policy) *admissionregistrationv1.SideEffectClass {
	if p.SideEffects != nil {
		return clone(p.SideEffects)
	}
	none := admissionregistrationv1.SideEffectClassNone
	return &none
}

// matchConditions copies the policy's match conditions.
func matchConditions(p Policy) []admissionregistrationv1.MatchCondition {
	if p.MatchConditions == nil {
		return nil
	}
	return append([]admissionregistrationv1.MatchCondition(nil), p.MatchConditions...)
}

// namespaceSelector keeps a ClusterAdmissionPolicy's webhook out of the controller's own
// namespace unless the policy allows it, and only that one: kube-system is not excluded
// (internal/controller/policy_subreconciler_webhook.go, policySubReconciler.namespaceSelector).
// As there, only the matchExpressions of the policy's selector are carried over: its matchLabels
// are dropped, so a policy selecting namespaces by matchLabels alone reaches every namespace but
// the controller's. A policy that allows its namespace gets its selector as it is.
func (o Options) namespaceSelector(p Policy) *metav1.LabelSelector {
	if p.AllowInsideAdmissionControllerNamespace {
		return p.NamespaceSelector.DeepCopy()
	}
	namespace := o.ControllerNamespace
	if namespace == "" {
		namespace = DefaultControllerNamespace
	}
	selector := &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key:      namespaceNameLabel,
			Operator: metav1.LabelSelectorOpNotIn,
			Values:   []string{namespace},
		}},
	}
	if p.NamespaceSelector != nil {
		for _, requirement := range p.NamespaceSelector.MatchExpressions {
			selector.MatchExpressions = append(selector.MatchExpressions, *requirement.DeepCopy())
		}
	}
	return selector
}
