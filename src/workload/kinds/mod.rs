//! The kinds the policy holds, one file each, and the table of them.
//!
//! Written by `make kinds` (restage-gate-release kind-modules) from the files in this folder:
//! add or remove a kind's file and run it again. The list keeps its order; a new file goes
//! last. It is laid out one kind a line, which rustfmt leaves as it is.

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
/// The kinds it does not hold, and why: docs/design.md §10.
#[rustfmt::skip]
pub const KINDS: [&dyn Workload; 4] = [
    &statefulset::StatefulSet,
    &daemonset::DaemonSet,
    &deployment::Deployment,
    &rollout::Rollout,
];
