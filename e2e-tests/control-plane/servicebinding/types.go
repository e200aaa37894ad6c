// ServiceBinding as the servicebinding.io runtime reads and writes it (apis/v1 of
// github.com/servicebinding/runtime), decoded from the unstructured objects the dynamic client
// returns. v1alpha3, v1beta1 and v1 share this schema, so one type reads all three.

package servicebinding

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/json"
)

// Group is the API group of ServiceBinding and ClusterWorkloadResourceMapping.
const Group = "servicebinding.io"

// Finalizer is the finalizer the runtime's reconciler keeps on every ServiceBinding it manages.
const Finalizer = Group + "/finalizer"

// Condition types and the reason the runtime writes on Ready when every dependent is True.
const (
	ConditionReady             = "Ready"
	ConditionServiceAvailable  = "ServiceAvailable"
	ConditionWorkloadProjected = "WorkloadProjected"
	ReasonServiceBound         = "ServiceBound"
)

var (
	// ServiceBindingsResource is the resource the controller watches.
	ServiceBindingsResource = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "servicebindings"}
	// ClusterWorkloadResourceMappingsResource is the runtime's other CRD; this stand-in never reads it.
	ClusterWorkloadResourceMappingsResource = schema.GroupVersionResource{Group: Group, Version: "v1", Resource: "clusterworkloadresourcemappings"}
)

// Binding is a ServiceBinding: what the projector, the reconciler and the webhook read of it.
type Binding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BindingSpec   `json:"spec,omitempty"`
	Status BindingStatus `json:"status,omitempty"`
}

// BindingSpec is ServiceBindingSpec.
type BindingSpec struct {
	// Name is the directory under $SERVICE_BINDING_ROOT; Default fills it from metadata.name.
	Name     string            `json:"name,omitempty"`
	Type     string            `json:"type,omitempty"`
	Provider string            `json:"provider,omitempty"`
	Workload WorkloadReference `json:"workload"`
	Service  ServiceReference  `json:"service"`
	Env      []EnvMapping      `json:"env,omitempty"`
}

// WorkloadReference names the workload by name or by label selector.
type WorkloadReference struct {
	APIVersion string                `json:"apiVersion"`
	Kind       string                `json:"kind"`
	Name       string                `json:"name,omitempty"`
	Selector   *metav1.LabelSelector `json:"selector,omitempty"`
	// Containers limits the projection to these containers; empty means all.
	Containers []string `json:"containers,omitempty"`
}

// ServiceReference is a v1 Secret or a provisioned service (anything with status.binding.name).
type ServiceReference struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
}

// SecretReference names the binding secret.
type SecretReference struct {
	Name string `json:"name"`
}

// EnvMapping exposes one secret entry (or the type / provider) as an environment variable.
type EnvMapping struct {
	Name string `json:"name"`
	Key  string `json:"key"`
}

// BindingStatus is ServiceBindingStatus.
type BindingStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	Binding            *SecretReference   `json:"binding,omitempty"`
}

// Default is the runtime's ServiceBinding.Default: spec.name falls back to metadata.name. The
// runtime defaults every binding before projecting it, in the reconciler and in the webhook.
func (b *Binding) Default() {
	if b.Spec.Name == "" {
		b.Spec.Name = b.Name
	}
}

// SecretName is status.binding.name, the secret the projection mounts; empty while unresolved.
func (b *Binding) SecretName() string {
	if b.Status.Binding == nil {
		return ""
	}
	return b.Status.Binding.Name
}

// BindingFromUnstructured decodes a ServiceBinding of any servicebinding.io version.
func BindingFromUnstructured(u *unstructured.Unstructured) (Binding, error) {
	var b Binding
	if gv := u.GroupVersionKind(); gv.Group != Group || gv.Kind != "ServiceBinding" {
		return b, fmt.Errorf("%s %s/%s is not a servicebinding.io ServiceBinding", u.GetAPIVersion(), u.GetKind(), u.GetName())
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
		return b, fmt.Errorf("decoding ServiceBinding %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return b, nil
}

// ParseBinding decodes a ServiceBinding from JSON.
func ParseBinding(data []byte) (Binding, error) {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return Binding{}, err
	}
	return BindingFromUnstructured(u)
}

// copyStatus is a deep copy, so the reconciler can tell whether it changed the status.
func copyStatus(s BindingStatus) BindingStatus {
	out := s
	if s.Conditions != nil {
		out.Conditions = make([]metav1.Condition, len(s.Conditions))
		copy(out.Conditions, s.Conditions)
	}
	if s.Binding != nil {
		ref := *s.Binding
		out.Binding = &ref
	}
	return out
}

// statusToUnstructured renders the status as the API server stores it.
func statusToUnstructured(s BindingStatus) (map[string]interface{}, error) {
	data, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}
