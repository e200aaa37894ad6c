// Reading ClusterAdmissionPolicy manifests from multi-document YAML files, with what the API
// server (from the Kubewarden CRD) and the controller's webhooks would default or refuse, so that
// a manifest a cluster would not accept fails here too.
package kubewarden

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// manifest is a ClusterAdmissionPolicy document. Pointers tell a field left out from one set
// to its zero value, where the CRD defaults or requires it.
type manifest struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       manifestSpec      `json:"spec"`
	Status     json.RawMessage   `json:"status,omitempty"`
}

// manifestSpec has the JSON names of PolicySpec and ClusterAdmissionPolicySpec
// (api/policies/v1/policy_types.go, api/policies/v1/clusteradmissionpolicy_types.go).
type manifestSpec struct {
	PolicyServer                            *string                                      `json:"policyServer"`
	Mode                                    *Mode                                        `json:"mode"`
	Module                                  *string                                      `json:"module"`
	Settings                                json.RawMessage                              `json:"settings"`
	Rules                                   []admissionregistrationv1.RuleWithOperations `json:"rules"`
	FailurePolicy                           *admissionregistrationv1.FailurePolicyType   `json:"failurePolicy"`
	Mutating                                *bool                                        `json:"mutating"`
	BackgroundAudit                         *bool                                        `json:"backgroundAudit"`
	MatchPolicy                             *admissionregistrationv1.MatchPolicyType     `json:"matchPolicy"`
	MatchConditions                         []admissionregistrationv1.MatchCondition     `json:"matchConditions"`
	ObjectSelector                          *metav1.LabelSelector                        `json:"objectSelector"`
	SideEffects                             *admissionregistrationv1.SideEffectClass     `json:"sideEffects"`
	TimeoutSeconds                          *int32                                       `json:"timeoutSeconds"`
	TimeoutEvalSeconds                      *int32                                       `json:"timeoutEvalSeconds"`
	Message                                 string                                       `json:"message"`
	NamespaceSelector                       *metav1.LabelSelector                        `json:"namespaceSelector"`
	ContextAwareResources                   []ContextAwareResource                       `json:"contextAwareResources"`
	AllowInsideAdmissionControllerNamespace bool                                         `json:"allowInsideAdmissionControllerNamespace"`
}

// ReadPolicies reads the ClusterAdmissionPolicy (policies.kubewarden.io/v1) documents of the
// multi-document YAML files at paths, in order, with the defaults of a cluster applied (see
// Policy). Documents of any other kind or version are skipped. A field the CRD does not know, a
// required field left out, or a value the CRD or the controller's validating webhook refuses is
// an error naming the file, the document and the field; so is one policy name in two documents,
// since the policy id keys policies.yml.
func ReadPolicies(paths ...string) ([]Policy, error) {
	var policies []Policy
	where := map[string]string{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		documents, err := splitDocuments(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		for i, document := range documents {
			at := fmt.Sprintf("%s: document %d", path, i+1)
			policy, ok, err := readDocument(document)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", at, err)
			}
			if !ok {
				continue
			}
			if first, seen := where[policy.Name]; seen {
				return nil, fmt.Errorf("%s: %s %q: also defined at %s", at, Kind, policy.Name, first)
			}
			where[policy.Name] = at
			policies = append(policies, policy)
		}
	}
	return policies, nil
}

// splitDocuments splits a YAML stream at its `---` separators, as kubectl does.
func splitDocuments(data []byte) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var documents [][]byte
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return documents, nil
		}
		if err != nil {
			return nil, err
		}
		documents = append(documents, document)
	}
}

// readDocument returns the policy of one document, or false for a document that is not a
// ClusterAdmissionPolicy (including one of comments only).
func readDocument(document []byte) (Policy, bool, error) {
	var typeMeta metav1.TypeMeta
	if err := yaml.Unmarshal(document, &typeMeta); err != nil {
		return Policy{}, false, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	if typeMeta.APIVersion != APIVersion || typeMeta.Kind != Kind {
		return Policy{}, false, nil
	}
	// Strict and case-sensitive, as kubectl's default server-side field validation is: a
	// misspelt field is refused rather than pruned by the CRD's structural schema.
	data, err := yaml.YAMLToJSONStrict(document)
	if err != nil {
		return Policy{}, false, err
	}
	var m manifest
	strict, err := kjson.UnmarshalStrict(data, &m)
	if err != nil {
		return Policy{}, false, fmt.Errorf("%s %q: %w", Kind, m.Metadata.Name, err)
	}
	if len(strict) > 0 {
		return Policy{}, false, fmt.Errorf("%s %q: %w", Kind, m.Metadata.Name, errors.Join(strict...))
	}
	policy, errs := fromManifest(m)
	if len(errs) > 0 {
		return Policy{}, false, fmt.Errorf("%s %q: %w", Kind, m.Metadata.Name, errs.ToAggregate())
	}
	return policy, true, nil
}

// fromManifest applies the defaults and the checks of a cluster to one manifest.
func fromManifest(m manifest) (Policy, field.ErrorList) {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	s := m.Spec

	if m.Metadata.Name == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "name"), ""))
	}
	// Required by the CRD (config/crd/bases/policies.kubewarden.io_clusteradmissionpolicies.yaml,
	// `required: [module, mutating, rules]`); an empty module is no module to the policy-server.
	if s.Module == nil || *s.Module == "" {
		errs = append(errs, field.Required(spec.Child("module"), ""))
	}
	if s.Mutating == nil {
		errs = append(errs, field.Required(spec.Child("mutating"), ""))
	}

	policy := Policy{
		Name:                                    m.Metadata.Name,
		PolicyServer:                            DefaultPolicyServer,
		Mode:                                    DefaultMode,
		Mutating:                                s.Mutating != nil && *s.Mutating,
		Rules:                                   s.Rules,
		FailurePolicy:                           s.FailurePolicy,
		MatchPolicy:                             s.MatchPolicy,
		NamespaceSelector:                       s.NamespaceSelector,
		ObjectSelector:                          s.ObjectSelector,
		MatchConditions:                         s.MatchConditions,
		SideEffects:                             s.SideEffects,
		TimeoutEvalSeconds:                      s.TimeoutEvalSeconds,
		BackgroundAudit:                         DefaultBackgroundAudit,
		Message:                                 s.Message,
		ContextAwareResources:                   s.ContextAwareResources,
		AllowInsideAdmissionControllerNamespace: s.AllowInsideAdmissionControllerNamespace,
	}
	if s.Module != nil {
		policy.Module = *s.Module
	}
	// An empty policyServer is defaulted too, by the defaulting webhook
	// (api/policies/v1/clusteradmissionpolicy_webhook.go, clusterAdmissionPolicyDefaulter.Default).
	if s.PolicyServer != nil && *s.PolicyServer != "" {
		policy.PolicyServer = *s.PolicyServer
	}
	if s.Mode != nil {
		policy.Mode = *s.Mode
		if policy.Mode != ModeProtect && policy.Mode != ModeMonitor {
			errs = append(errs, field.NotSupported(spec.Child("mode"), policy.Mode, []Mode{ModeProtect, ModeMonitor}))
		}
	}
	if s.BackgroundAudit != nil {
		policy.BackgroundAudit = *s.BackgroundAudit
	}
	timeout := DefaultTimeoutSeconds
	if s.TimeoutSeconds != nil {
		timeout = *s.TimeoutSeconds
	}
	policy.TimeoutSeconds = &timeout

	settings, err := settingsObject(s.Settings)
	if err != nil {
		errs = append(errs, field.Invalid(spec.Child("settings"), string(s.Settings), err.Error()))
	}
	policy.Settings = settings

	errs = append(errs, checkRules(s.Rules, spec.Child("rules"))...)
	errs = append(errs, checkTimeouts(policy, spec)...)
	errs = append(errs, checkMatchConditions(s.MatchConditions, spec.Child("matchConditions"))...)
	return policy, errs
}

// settingsObject is spec.settings, which the CRD types as a nullable object; null reads as left
// out, as runtime.RawExtension does in the controller.
func settingsObject(raw json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		return nil, nil
	}
	if trimmed[0] != '{' {
		return nil, errors.New("must be an object")
	}
	return append(json.RawMessage(nil), trimmed...), nil
}

// checkRules refuses what the controller's validating webhook refuses in spec.rules of a
// ClusterAdmissionPolicy (api/policies/v1/policy_validation.go, validateRulesField).
func checkRules(rules []admissionregistrationv1.RuleWithOperations, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rules) == 0 {
		return append(errs, field.Required(path, "a value must be specified"))
	}
	for i, rule := range rules {
		at := path.Index(i)
		if len(rule.Operations) == 0 {
			errs = append(errs, field.Required(at.Child("operations"), ""))
		}
		if len(rule.APIVersions) == 0 {
			errs = append(errs, field.Required(at.Child("apiVersions"), ""))
		}
		if len(rule.Resources) == 0 {
			errs = append(errs, field.Required(at.Child("resources"), ""))
		}
		for j, operation := range rule.Operations {
			if operation == "" {
				errs = append(errs, field.Required(at.Child("operations").Index(j), "must be non-empty"))
			}
		}
		errs = append(errs, checkNonEmpty(rule.APIVersions, at.Child("apiVersions"))...)
		errs = append(errs, checkNonEmpty(rule.Resources, at.Child("resources"))...)
	}
	return errs
}

func checkNonEmpty(values []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, value := range values {
		if value == "" {
			errs = append(errs, field.Required(path.Index(i), "must be non-empty"))
		}
	}
	return errs
}

// checkTimeouts applies the CRD's bounds on both timeouts (`+kubebuilder:validation:Minimum=2`,
// `Maximum=30`, api/policies/v1/policy_types.go) and the validating webhook's order between them
// (api/policies/v1/policy_validation.go, validateTimeoutSeconds).
func checkTimeouts(policy Policy, spec *field.Path) field.ErrorList {
	const lowest, highest = 2, 30
	var errs field.ErrorList
	for _, t := range []struct {
		name  string
		value *int32
	}{{"timeoutSeconds", policy.TimeoutSeconds}, {"timeoutEvalSeconds", policy.TimeoutEvalSeconds}} {
		if t.value != nil && (*t.value < lowest || *t.value > highest) {
			errs = append(errs, field.Invalid(spec.Child(t.name), *t.value, fmt.Sprintf("must be between %d and %d", lowest, highest)))
		}
	}
	if policy.TimeoutEvalSeconds != nil && *policy.TimeoutEvalSeconds > *policy.TimeoutSeconds {
		errs = append(errs, field.Invalid(spec.Child("timeoutEvalSeconds"), *policy.TimeoutEvalSeconds, "timeoutEvalSeconds cannot be greater than timeoutSeconds"))
	}
	return errs
}

// checkMatchConditions applies the validating webhook's checks on match conditions
// (api/policies/v1/policy_validation.go, validateMatchConditions) but for compiling the CEL
// expressions, which the API server does when the webhook configuration is created.
func checkMatchConditions(conditions []admissionregistrationv1.MatchCondition, path *field.Path) field.ErrorList {
	const most = 64
	var errs field.ErrorList
	if len(conditions) > most {
		errs = append(errs, field.TooMany(path, len(conditions), most))
	}
	names := sets.New[string]()
	for i, condition := range conditions {
		at := path.Index(i)
		if strings.TrimSpace(condition.Expression) == "" {
			errs = append(errs, field.Required(at.Child("expression"), ""))
		}
		switch {
		case condition.Name == "":
			errs = append(errs, field.Required(at.Child("name"), ""))
		case names.Has(condition.Name):
			errs = append(errs, field.Duplicate(at.Child("name"), condition.Name))
		default:
			names.Insert(condition.Name)
			for _, msg := range validation.IsQualifiedName(condition.Name) {
				errs = append(errs, field.Invalid(at.Child("name"), condition.Name, msg))
			}
		}
	}
	return errs
}
