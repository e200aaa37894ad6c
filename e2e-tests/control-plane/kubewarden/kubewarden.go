// Package kubewarden makes, from Kubewarden ClusterAdmissionPolicy manifests, what the Kubewarden
// controller makes of them: the webhook configuration it registers with the API server for each
// policy, and the policies.yml it gives the policy-server. The harness installs both itself, with
// no controller in the cluster, so that the API server calls restage-gate as it would in one.
//
// Citations name files (and functions) of github.com/kubewarden/kubewarden-controller at tag
// v1.35.0, the release whose policy-server reads the policies.yml written here. The files cited
// are unchanged in substance at the repository's later commits (since renamed
// kubewarden/adm-controller).
package kubewarden

import (
	"encoding/json"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The ClusterAdmissionPolicy resource this package reads
// (api/policies/v1/groupversion_info.go, api/policies/v1/clusteradmissionpolicy_types.go).
const (
	APIVersion = "policies.kubewarden.io/v1"
	Kind       = "ClusterAdmissionPolicy"
)

// Mode is how the policy-server hands a policy's answer to the API server.
type Mode string

// The values of spec.mode (api/policies/v1/policy_types.go, PolicyMode).
const (
	// ModeProtect passes the policy's answer on as it is.
	ModeProtect Mode = "protect"
	// ModeMonitor always allows and never changes; the policy's answer is only logged.
	ModeMonitor Mode = "monitor"
)

// Defaults the API server (from the CRD) or the controller's defaulting webhook gives a
// ClusterAdmissionPolicy when its manifest leaves the field out.
const (
	// DefaultMode is spec.mode's `+kubebuilder:default:=protect` (api/policies/v1/policy_types.go,
	// PolicySpec.Mode; config/crd/bases/policies.kubewarden.io_clusteradmissionpolicies.yaml).
	DefaultMode = ModeProtect
	// DefaultPolicyServer is spec.policyServer's `+kubebuilder:default:=default`
	// (api/policies/v1/policy_types.go, PolicySpec.PolicyServer), which the defaulting webhook
	// also sets (api/policies/v1/clusteradmissionpolicy_webhook.go,
	// clusterAdmissionPolicyDefaulter.Default; internal/constants/constants.go,
	// DefaultPolicyServer).
	DefaultPolicyServer = "default"
	// DefaultBackgroundAudit is spec.backgroundAudit's `+kubebuilder:default:=true`
	// (api/policies/v1/policy_types.go, PolicySpec.BackgroundAudit).
	DefaultBackgroundAudit = true
	// DefaultTimeoutSeconds is spec.timeoutSeconds' `+kubebuilder:default:=10`
	// (api/policies/v1/policy_types.go, PolicySpec.TimeoutSeconds).
	DefaultTimeoutSeconds int32 = 10
)

// ContextAwareResource is a resource a policy may read through the policy-server
// (api/policies/v1/clusteradmissionpolicy_types.go, ContextAwareResource).
type ContextAwareResource struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// Policy is one ClusterAdmissionPolicy as the API server stores it: the manifest's spec with the
// CRD's and the defaulting webhook's defaults applied. Field meanings are those of
// api/policies/v1/policy_types.go (PolicySpec) and api/policies/v1/clusteradmissionpolicy_types.go
// (ClusterAdmissionPolicySpec).
type Policy struct {
	// Name is metadata.name.
	Name string
	// PolicyServer is spec.policyServer: DefaultPolicyServer when left out.
	PolicyServer string
	// Mode is spec.mode: DefaultMode when left out.
	Mode Mode
	// Mutating is spec.mutating (required by the CRD).
	Mutating bool
	// Module is spec.module (required by the CRD), e.g. a registry:// reference.
	Module string
	// Settings is spec.settings as JSON (an object), or nil when left out or null.
	Settings json.RawMessage
	// Rules is spec.rules (required by the CRD).
	Rules []admissionregistrationv1.RuleWithOperations
	// FailurePolicy is spec.failurePolicy: nil when left out, which the API server turns into
	// Fail on the webhook (the CRD has no default for it).
	FailurePolicy *admissionregistrationv1.FailurePolicyType
	// MatchPolicy is spec.matchPolicy: nil when left out, Equivalent on the webhook.
	MatchPolicy *admissionregistrationv1.MatchPolicyType
	// NamespaceSelector is spec.namespaceSelector.
	NamespaceSelector *metav1.LabelSelector
	// ObjectSelector is spec.objectSelector.
	ObjectSelector *metav1.LabelSelector
	// MatchConditions is spec.matchConditions.
	MatchConditions []admissionregistrationv1.MatchCondition
	// SideEffects is spec.sideEffects: nil when left out, None on the webhook.
	SideEffects *admissionregistrationv1.SideEffectClass
	// TimeoutSeconds is spec.timeoutSeconds: DefaultTimeoutSeconds when left out.
	TimeoutSeconds *int32
	// TimeoutEvalSeconds is spec.timeoutEvalSeconds: nil when left out.
	TimeoutEvalSeconds *int32
	// BackgroundAudit is spec.backgroundAudit: DefaultBackgroundAudit when left out.
	BackgroundAudit bool
	// Message is spec.message, the refusal message that replaces the policy's own.
	Message string
	// ContextAwareResources is spec.contextAwareResources.
	ContextAwareResources []ContextAwareResource
	// AllowInsideAdmissionControllerNamespace is spec.allowInsideAdmissionControllerNamespace:
	// when false the webhook is kept out of the controller's own namespace.
	AllowInsideAdmissionControllerNamespace bool
}

// IDPrefix starts the policy id of every ClusterAdmissionPolicy.
const IDPrefix = "clusterwide-"

// ID is the policy id: the policy's key in policies.yml, the <policy-id> of the policy-server's
// /validate/<policy-id>, and the name of its webhook configuration
// (api/policies/v1/clusteradmissionpolicy_types.go, ClusterAdmissionPolicy.GetUniqueName).
func (p Policy) ID() string {
	return IDPrefix + p.Name
}
