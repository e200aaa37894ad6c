//! The workload kinds a servicebinding.io runtime projects into, one file each behind one
//! small interface. The decision table (`policy.rs`) asks the kind how to hold, release and
//! read a rollout; everything that differs between kinds lives here.
//!
//! A new kind is one file implementing [`Workload`] and one row in [`KINDS`].

mod daemonset;
mod deployment;
mod statefulset;
mod update_strategy;

use serde_json::Value;

use crate::json::{at, set_at, Unwritable};
use crate::markers::{self, Hold};
use crate::template::classify::Change;

pub use daemonset::DaemonSet;
pub use deployment::Deployment;
pub use statefulset::StatefulSet;

/// Members of a `status`, each with the members read of the objects listed in it (none: the
/// whole member).
pub type StatusRead = &'static [(&'static str, &'static [&'static str])];

/// A kind whose controller rolls every pod when the pod template changes. Every value is read
/// from and written to the request's raw JSON.
pub trait Workload: Sync {
    /// `kind` as the API names it: `StatefulSet`.
    fn kind(&self) -> &'static str;

    /// The field the hold replaces, as object keys: `spec.updateStrategy`, `spec.paused`.
    fn control_path(&self) -> &'static [&'static str];

    /// The value of the control that holds the rollout.
    fn held_control(&self) -> Value;

    /// Whether this value of the control already keeps pods from rolling (an owner's own
    /// `OnDelete` or pause): nothing would roll, so there is nothing to hold.
    fn stops_rollouts(&self, control: Option<&Value>) -> bool;

    /// The value the API server gives the control when it is absent.
    fn default_control(&self) -> Value;

    /// Whether the API server accepts this value of the control: a release writes back only
    /// such a value, or it would make the write that carries it fail.
    fn accepts(&self, control: &Value) -> bool;

    /// The annotation that remembers the replaced control.
    fn remembered_annotation(&self) -> &'static str;

    /// Whether a rollout is under way (read from `oldObject`): a binding change then joins it.
    fn rollout_in_progress(&self, old: &Value) -> bool;

    /// The members of `oldObject.status` that `rollout_in_progress` reads; the request's reader
    /// skips the others (`object.rs`).
    fn status_read(&self) -> StatusRead;

    /// Why this binding change must roll now instead of waiting, if it must.
    fn must_roll_now(&self, _change: &Change) -> Option<String> {
        None
    }

    /// Whether a request that sets a rolling control on a held workload asks for the release
    /// (a Deployment's `rollout resume`); otherwise the new control is remembered for later.
    fn resume_releases(&self) -> bool {
        false
    }

    /// The command that applies held binding changes now.
    fn apply_held_now(&self, namespace: &str, name: &str) -> String {
        // Concatenated, not formatted: `format!` costs several times as much in the module.
        let kind = self.kind().to_lowercase();
        [
            "kubectl rollout restart ",
            &kind,
            "/",
            name,
            " -n ",
            namespace,
        ]
        .concat()
    }

    /// The control as the object has it.
    fn control<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        at(object, self.control_path())
    }
}

impl std::fmt::Debug for dyn Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

impl PartialEq for dyn Workload {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind()
    }
}

/// Every kind the policy holds, by API group and kind. ReplicaSets, ReplicationControllers and
/// CronJobs restart nothing on a template change, and a Job's template is immutable: they are
/// not here, and the policy accepts them unchanged.
const KINDS: [(&str, &dyn Workload); 3] = [
    ("apps", &StatefulSet),
    ("apps", &DaemonSet),
    ("apps", &Deployment),
];

/// The kind of an admission request, when the policy holds it.
pub fn of(group: &str, kind: &str) -> Option<&'static dyn Workload> {
    KINDS
        .iter()
        .find(|(g, w)| *g == group && w.kind() == kind)
        .map(|(_, w)| *w)
}

/// How much of member `key` of `oldObject.status` some kind reads: `None` when none does.
pub fn status_member(key: &str) -> Option<StatusMember<'_>> {
    status_reads(key).next().map(|_| StatusMember(key))
}

/// A member of `oldObject.status` some kind reads.
#[derive(Debug, Clone, Copy)]
pub struct StatusMember<'k>(&'k str);

impl StatusMember<'_> {
    /// Whether some kind reads all of it.
    pub fn whole(self) -> bool {
        status_reads(self.0).any(<[_]>::is_empty)
    }

    /// Whether some kind reads `member` of the objects listed in it.
    pub fn reads(self, member: &str) -> bool {
        status_reads(self.0).any(|members| members.contains(&member))
    }
}

fn status_reads(key: &str) -> impl Iterator<Item = &'static [&'static str]> + '_ {
    KINDS
        .iter()
        .flat_map(|(_, w)| w.status_read())
        .filter(move |(k, _)| *k == key)
        .map(|(_, members)| *members)
}

/// An integer of the object's `status`.
fn status_int(status: &Value, key: &str) -> Option<i64> {
    status.get(key).and_then(Value::as_i64)
}

/// The controller has not yet observed the newest generation of the spec.
fn generation_stale(old: &Value, status: &Value) -> bool {
    matches!(
        (status_int(status, "observedGeneration"), at(old, &["metadata", "generation"]).and_then(Value::as_i64)),
        (Some(observed), Some(generation)) if observed < generation
    )
}

/// `spec.replicas`, 1 when absent as the API server defaults it.
fn replicas(old: &Value) -> i64 {
    at(old, &["spec", "replicas"])
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// Leaves `object` held: the kind's held control and every marker. Returns whether anything
/// changed.
pub fn hold(object: &mut Value, workload: &dyn Workload, hold: &Hold) -> Result<bool, Unwritable> {
    let control = set_at(object, workload.control_path(), workload.held_control())?;
    Ok(markers::write(object, hold)? | control)
}

/// A hold that remembers the API default control: what a workload created without a control
/// carries once held (test fixtures and tools start from it).
pub fn default_hold(workload: &dyn Workload, held_since: &str, pending: &str) -> Hold {
    Hold {
        remembered_key: workload.remembered_annotation(),
        remembered: workload.default_control().to_string(),
        held_since: held_since.into(),
        pending: pending.into(),
    }
}

/// Restores `restore`, if given (otherwise the control stays as the request sets it), and
/// removes every marker. Returns whether anything changed.
pub fn release(
    object: &mut Value,
    workload: &dyn Workload,
    restore: Option<Value>,
) -> Result<bool, Unwritable> {
    let control = match restore {
        Some(value) => set_at(object, workload.control_path(), value)?,
        None => false,
    };
    Ok(markers::remove(object)? | control)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_found_by_group_and_kind_only() {
        for kind in ["StatefulSet", "DaemonSet", "Deployment"] {
            assert_eq!(of("apps", kind).map(|w| w.kind()), Some(kind));
            assert!(of("extensions", kind).is_none(), "{kind} in another group");
        }
        for kind in [
            "ReplicaSet",
            "ReplicationController",
            "CronJob",
            "Job",
            "Pod",
            "",
        ] {
            assert!(
                of("apps", kind).is_none() && of("batch", kind).is_none(),
                "{kind}"
            );
        }
    }
}
