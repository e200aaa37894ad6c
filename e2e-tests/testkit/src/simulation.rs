//! What a kind's controller does with its pods in the cluster simulation (`restage-gate-e2e`'s
//! `cluster`): each descriptor brings a [`Controller`], which the simulation calls on every
//! stored write with the pods it keeps ([`Pods`]).

use serde_json::Value;

/// A pod the simulation keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    /// The StatefulSet ordinal, the DaemonSet node, the Deployment pod index.
    pub ordinal: usize,
    /// Index into the pod templates the controller has seen.
    pub revision: usize,
}

/// The pods of the workload, as a controller changes them.
pub trait Pods {
    /// Exactly `count` pods, ordinals from 0: missing ones created from `revision`.
    fn fill(&mut self, count: usize, revision: usize);

    /// Replaces the pods not at `revision` that `may_replace` allows (highest ordinal first),
    /// within the simulation's step budget: a rolling update.
    fn roll(&mut self, revision: usize, may_replace: &dyn Fn(&Pod) -> bool);

    /// How many pods run `revision`.
    fn updated(&self, revision: usize) -> usize;

    /// How many pods run.
    fn count(&self) -> usize;
}

/// A kind's controller: pods follow the stored object.
pub trait Controller: Send {
    /// Reconciles `object` (whose template is `revision`) at `replicas` pods; returns the
    /// `status` the controller writes.
    fn reconcile(
        &mut self,
        object: &Value,
        revision: usize,
        replicas: usize,
        pods: &mut dyn Pods,
    ) -> Value;
}
