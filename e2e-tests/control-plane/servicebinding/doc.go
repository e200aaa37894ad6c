// Package servicebinding stands in for the servicebinding.io reference runtime
// (github.com/servicebinding/runtime v1.0.0) in the control-plane harness: the projector that
// writes a ServiceBinding into a workload's pod template, the reconciler that keeps it there, and
// the mutating admission webhook that folds bindings into every other write of a workload. Those
// writes are the pod-template changes restage-gate holds, so the stand-in reproduces what the
// runtime writes, in the order it writes it, rather than an idealised projection.
//
// The runtime itself cannot be built here: its reconciler.io dependencies are not served by the Go
// module proxy, and its apis use controller-runtime interfaces that the controller-runtime going
// with this harness's Kubernetes release no longer has. The harness therefore installs the
// runtime's real CRDs (CRDs) and runs this port of its projector, reconciler and webhook, built on
// client-go alone.
//
// Kept from the runtime: volume, mount, env and annotation names and their order; the mapping
// annotation on the workload's own metadata; SERVICE_BINDING_ROOT left behind on unbind; empty
// lists and maps written back by an unprojection; the finalizer; the halt after a new binding
// secret; the conditions and their transition times; full-object Updates skipped when nothing
// changes; the memory of webhook mutations of its own writes (until the workload's generation
// moves); the webhook's choice of bindings and its JSON Patch answer; the webhook configuration.
//
// Not kept, and why:
//   - Only the pod-specable mapping (pod template at spec.template: Deployment, StatefulSet,
//     DaemonSet, Argo Rollout). ClusterWorkloadResourceMappings are never read, and a workload
//     recorded with any other mapping is refused rather than unprojected at the wrong paths.
//   - The webhook configuration's rules name the four kinds above from the start; the runtime
//     derives them from the kinds its bindings refer to and its RBAC.
//   - The runtime's servicebinding-trigger validating webhook, which re-reconciles a binding when
//     its workload or provisioned service is written, is replaced by watches on those kinds; they
//     fire once the write is stored instead of while it is admitted.
//   - No validating, defaulting or conversion webhooks for the runtime's own kinds (the CRD
//     bases declare no conversion), no events, no leader election, no VMware migration hooks.
//   - The webhook's JSON Patch is computed with gomodules.xyz/jsonpatch/v2 where the runtime's
//     webhook adapter uses v3: the operations may differ, the patched object does not.
//   - The webhook projects the namespace's bindings in name order; the runtime's cache lists them
//     in no fixed order.
package servicebinding
