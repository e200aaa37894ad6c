//! The test kit's descriptors, one file per kind the policy holds.
//!
//! Written by `make kinds` (restage-gate-release kind-modules) from the files in this folder:
//! add or remove a kind's file and run it again. The list keeps its order; a new file goes
//! last. It is laid out one kind a line, which rustfmt leaves as it is.

mod daemonset;
mod deployment;
mod rollout;
mod statefulset;

use crate::descriptor::Descriptor;

/// A descriptor per file here; `lookup::every` orders them as the policy's `KINDS`.
#[rustfmt::skip]
pub(crate) const DESCRIPTORS: [&dyn Descriptor; 4] = [
    &statefulset::StatefulSet,
    &daemonset::DaemonSet,
    &deployment::Deployment,
    &rollout::Rollout,
];
