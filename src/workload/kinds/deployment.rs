//! `apps/v1` Deployment: held with `spec.paused: true` (`control.rs`: a paused Deployment scales
//! its **old** ReplicaSet, so a change that drops a binding secret rolls now).

use serde_json::Value;

use crate::view::items;
use crate::workload::{
    generation_stale, kubectl_rollout, replicas, Control, Json, Kind, StatusMember, Workload,
};
use crate::workload::{OBSERVED_GENERATION, READS_GENERATION, READS_REPLICAS, TEMPLATE};

/// The replaced `spec.paused`, as JSON.
pub const ORIGINAL_PAUSED_ANNOTATION: &str = "restage-gate.io/original-paused";

pub struct Deployment;

const UPDATED_REPLICAS: StatusMember = StatusMember::new("updatedReplicas", Json::Integer);
const CONDITIONS: StatusMember = StatusMember::new("conditions", Json::ListOf(&["type", "reason"]));

const DECLARED: Kind = Kind {
    group: "apps",
    version: "v1",
    kind: "Deployment",
    resource: "deployments",
    template: TEMPLATE,
    control: Control::pause(&["spec", "paused"]),
    remembered: ORIGINAL_PAUSED_ANNOTATION,
    reads: &[READS_GENERATION, READS_REPLICAS],
    status: &[OBSERVED_GENERATION, UPDATED_REPLICAS, CONDITIONS],
};

impl Workload for Deployment {
    fn declared(&self) -> &'static Kind {
        &DECLARED
    }

    /// The controller has not caught up, not every replica runs the new template, or the
    /// Progressing condition says a new ReplicaSet is still being rolled out:
    /// `status.observedGeneration` < `metadata.generation`, `status.updatedReplicas` <
    /// `spec.replicas`, or a `Progressing` condition with reason `ReplicaSetUpdated`.
    fn rolling_out(&self, old: &Value, status: &Value) -> bool {
        let behind = UPDATED_REPLICAS.integer(status).unwrap_or(0) < replicas(old);
        let progressing = items(CONDITIONS.of(status)).any(|c| {
            c.get("type").and_then(Value::as_str) == Some("Progressing")
                && c.get("reason").and_then(Value::as_str) == Some("ReplicaSetUpdated")
        });
        generation_stale(old, status) || behind || progressing
    }

    /// `kubectl rollout restart` refuses a paused Deployment; `rollout resume` applies the
    /// held changes (and is also what a Deployment that is not held needs to roll).
    fn apply_held_now(&self, namespace: &str, name: &str) -> String {
        kubectl_rollout("resume", &DECLARED, namespace, name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::classify::Change;
    use crate::template::classify::{BindingDelta, ChangeKind};
    use serde_json::json;

    const DEPLOYMENT: &dyn Workload = &Deployment;

    #[test]
    fn only_booleans_are_restorable() {
        assert!(DEPLOYMENT.accepts(&json!(false)) && DEPLOYMENT.accepts(&json!(true)));
        for garbage in [json!("false"), json!(0), json!(null), json!({})] {
            assert!(!DEPLOYMENT.accepts(&garbage), "{garbage}");
        }
    }

    #[test]
    fn rollout_in_progress_reads_replicas_and_the_progressing_reason() {
        let base = json!({"metadata": {"generation": 5}, "spec": {"replicas": 2},
            "status": {"observedGeneration": 5, "updatedReplicas": 2, "conditions": [
                {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}});
        assert!(!DEPLOYMENT.rollout_in_progress(&base));
        for (path, value) in [
            ("/status/observedGeneration", json!(4)),
            ("/status/updatedReplicas", json!(1)),
            ("/status/conditions/0/reason", json!("ReplicaSetUpdated")),
        ] {
            let mut d = base.clone();
            *d.pointer_mut(path).expect("field") = value;
            assert!(DEPLOYMENT.rollout_in_progress(&d), "{path}");
        }
    }

    #[test]
    fn a_change_that_drops_a_binding_secret_rolls_now() {
        let change = |removed: &[&str], dropped: &[&str]| Change {
            kind: ChangeKind::BindingOnly,
            emptied: false,
            delta: BindingDelta {
                removed: removed.iter().map(|s| s.to_string()).collect(),
                ..BindingDelta::default()
            },
            dropped_secrets: dropped.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(Deployment.must_roll_now(&change(&[], &[])), None);
        let unbind = Deployment.must_roll_now(&change(&["orders-db"], &["orders-secret"]));
        assert!(unbind.is_some_and(|why| why.starts_with("binding orders-db removed")));
        let switched = Deployment.must_roll_now(&change(&[], &["old-secret"]));
        assert!(
            switched.is_some_and(|why| why.starts_with("secret old-secret no longer projected"))
        );
    }
}
