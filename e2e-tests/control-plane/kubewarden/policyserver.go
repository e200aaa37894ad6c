// The policies.yml the Kubewarden controller writes into a policy-server's ConfigMap, which the
// policy-server reads with --policies: read by the harness's webhook server and by a real
// policy-server alike, so it is written in the controller's own encoding.
package kubewarden

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// PoliciesFileName is the ConfigMap key the controller writes the file under
// (internal/constants/constants.go, PolicyServerConfigPoliciesEntry).
const PoliciesFileName = "policies.yml"

// policyServerEntry is one policy of policies.yml: the fields, names, order and omissions of the
// controller's encoding of a policy that is not a group
// (internal/controller/policyserver_controller_configmap.go, policyServerConfigEntry.MarshalJSON).
type policyServerEntry struct {
	// NamespacedName has no JSON tags of its own, so it encodes as {"Namespace":…,"Name":…};
	// the policy-server ignores it.
	NamespacedName types.NamespacedName `json:"namespacedName"`
	Module         string               `json:"module"`
	PolicyMode     Mode                 `json:"policyMode"`
	// AllowedToMutate is written even when false, unlike in the controller's struct tags: its
	// MarshalJSON drops the omitempty. Without it, the policy-server turns a mutation into a
	// rejection.
	AllowedToMutate       bool                   `json:"allowedToMutate"`
	ContextAwareResources []ContextAwareResource `json:"contextAwareResources,omitempty"`
	// Settings is written as null when the policy has none: the controller's field is a
	// runtime.RawExtension, a struct, which omitempty never omits and which encodes nil as null.
	Settings           json.RawMessage `json:"settings"`
	Message            string          `json:"message,omitempty"`
	TimeoutEvalSeconds *int32          `json:"timeoutEvalSeconds,omitempty"`
	HostCapabilities   []string        `json:"hostCapabilities"`
}

// PolicyServerConfig is the policies.yml the controller writes for a policy-server serving these
// policies (internal/controller/policyserver_controller_configmap.go, updateConfigMapData and
// buildPoliciesMap): a JSON object, which is YAML too, from policy id to policy, keys sorted. Each
// policy's module is moduleFor(policy) instead of spec.module (spec.module when moduleFor is nil),
// so that the server loads a file on this machine rather than pulling from a registry. A module
// with a scheme (file://, registry://, https://) is written as it is; a bare path must be
// absolute and is written as a file:// URL, because the policy-server reads a module without a
// scheme as a registry reference (crates/policy-fetcher/src/lib.rs, parse_url).
//
// The controller writes one file per PolicyServer, with the policies whose spec.policyServer
// names it; every policy given here is written, whatever its spec.policyServer.
func PolicyServerConfig(policies []Policy, moduleFor func(Policy) string) ([]byte, error) {
	entries := make(map[string]policyServerEntry, len(policies))
	for _, p := range policies {
		id := p.ID()
		if _, dup := entries[id]; dup {
			return nil, fmt.Errorf("policy id %q: two policies named %q", id, p.Name)
		}
		module := p.Module
		if moduleFor != nil {
			module = moduleFor(p)
		}
		module, err := moduleURL(module)
		if err != nil {
			return nil, fmt.Errorf("policy %q: module: %w", id, err)
		}
		settings := p.Settings
		if len(bytes.TrimSpace(settings)) == 0 {
			settings = nil
		} else if !json.Valid(settings) {
			return nil, fmt.Errorf("policy %q: settings: not JSON: %q", id, settings)
		}
		entries[id] = policyServerEntry{
			// The entry's fields follow buildPoliciesMap
			// (internal/controller/policyserver_controller_configmap.go).
			// `types.NamespacedName{Namespace: GetNamespace(), Name: GetName()}`: no namespace
			// for a ClusterAdmissionPolicy.
			NamespacedName: types.NamespacedName{Name: p.Name},
			// `GetModule()`, replaced by moduleFor.
			Module: module,
			// `string(GetPolicyMode())`: spec.mode.
			PolicyMode: p.Mode,
			// `IsMutating()`: spec.mutating.
			AllowedToMutate: p.Mutating,
			// `GetSettings()`: spec.settings.
			Settings: settings,
			// `GetContextAwareResources()`: spec.contextAwareResources.
			ContextAwareResources: p.ContextAwareResources,
			// `GetMessage()`: spec.message.
			Message: p.Message,
			// `GetTimeoutEvalSeconds()`: spec.timeoutEvalSeconds.
			TimeoutEvalSeconds: p.TimeoutEvalSeconds,
			// hostCapabilitiesForPolicy: every host capability for a policy with no
			// namespace.
			HostCapabilities: []string{"*"},
		}
	}
	// encoding/json writes map keys sorted, as the controller's json.Marshal of its map does.
	return json.Marshal(entries)
}

// moduleURL is module as the policy-server should read it: a URL as it is, an absolute path as
// a file:// URL. A path with '%', '?' or '#' is refused, since those would be read back as an
// escape, a query or a fragment rather than as the path.
func moduleURL(module string) (string, error) {
	if module == "" {
		return "", fmt.Errorf("no module: set spec.module to the module's registry:// reference, or give the harness a local file")
	}
	if strings.Contains(module, "://") {
		return module, nil
	}
	if !filepath.IsAbs(module) {
		return "", fmt.Errorf("%q: a path must be absolute: the policy-server would read a relative one as a registry reference", module)
	}
	if strings.ContainsAny(module, "%?#") {
		return "", fmt.Errorf("%q: a path with '%%', '?' or '#' does not survive as a file:// URL", module)
	}
	return "file://" + filepath.ToSlash(module), nil
}
