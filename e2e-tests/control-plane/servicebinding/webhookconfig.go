// The runtime's `servicebinding-admission-projector` MutatingWebhookConfiguration, as
// config/servicebinding-runtime.yaml declares it, with the rules its webhook controller writes
// for the four workload kinds the harness binds and a URL in place of the in-cluster Service.

package servicebinding

import (
	"net/url"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AdmissionProjectorName is the configuration's name in the runtime's release. The API server
// calls mutating configurations in name order, so the name decides who runs first.
const AdmissionProjectorName = "servicebinding-admission-projector"

// AdmissionProjectorWebhookName is the name of the configuration's one webhook.
const AdmissionProjectorWebhookName = "interceptor.servicebinding.io"

// DynamicRulesAnnotation marks the configurations whose rules the runtime rewrites.
const DynamicRulesAnnotation = "webhook.servicebinding.io/dynamic-rules"

// MutatingWebhookConfiguration builds the configuration calling the webhook at url, trusted
// through caBundle; a url without a path gets WebhookPath. An empty name means
// AdmissionProjectorName.
func MutatingWebhookConfiguration(rawURL string, caBundle []byte, name string) *admissionregistrationv1.MutatingWebhookConfiguration {
	if name == "" {
		name = AdmissionProjectorName
	}
	if u, err := url.Parse(rawURL); err == nil && (u.Path == "" || u.Path == "/") {
		u.Path = WebhookPath
		rawURL = u.String()
	}
	failurePolicy := admissionregistrationv1.Fail
	reinvocation := admissionregistrationv1.IfNeededReinvocationPolicy
	sideEffects := admissionregistrationv1.SideEffectClassNone
	operations := []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update}
	return &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{
			APIVersion: admissionregistrationv1.SchemeGroupVersion.String(),
			Kind:       "MutatingWebhookConfiguration",
		},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{DynamicRulesAnnotation: ""},
		},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    AdmissionProjectorWebhookName,
			AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				URL:      &rawURL,
				CABundle: append([]byte(nil), caBundle...),
			},
			FailurePolicy: &failurePolicy,
			NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key:      "kubernetes.io/metadata.name",
					Operator: metav1.LabelSelectorOpNotIn,
					Values:   []string{"servicebinding-system", "kube-system"},
				}},
			},
			ReinvocationPolicy: &reinvocation,
			SideEffects:        &sideEffects,
			// one rule per group, groups and resources sorted, as the webhook controller writes them
			Rules: []admissionregistrationv1.RuleWithOperations{
				{
					Operations: operations,
					Rule: admissionregistrationv1.Rule{
						APIGroups:   []string{"apps"},
						APIVersions: []string{"*"},
						Resources:   []string{"daemonsets", "deployments", "statefulsets"},
					},
				},
				{
					Operations: operations,
					Rule: admissionregistrationv1.Rule{
						APIGroups:   []string{"argoproj.io"},
						APIVersions: []string{"*"},
						Resources:   []string{"rollouts"},
					},
				},
			},
		}},
	}
}
