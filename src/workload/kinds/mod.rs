//! Written by `make kinds` (restage-gate-release kind-modules) from the files in this folder,
//! one per kind: add or remove a kind's file and run it again. The list keeps its order; a new
//! file goes last.

mod daemonset;
mod deployment;
mod rollout;
mod statefulset;

pub use daemonset::*;
pub use deployment::*;
pub use rollout::*;
pub use statefulset::*;

use super::Workload;

/// Every kind the policy holds, in the order every generated list of kinds follows.
/// ReplicaSets, ReplicationControllers and CronJobs restart nothing on a template
/// change, and a Job's template is immutable: they are not here, and the policy
/// accepts them unchanged.
pub const KINDS: [&dyn Workload; 4] = [
    &statefulset::StatefulSet,
    &daemonset::DaemonSet,
    &deployment::Deployment,
    &rollout::Rollout,
];
