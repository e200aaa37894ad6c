//! `argoproj.io/v1alpha1` Rollout (Argo Rollouts), canary strategy: held with `spec.paused:
//! true`. A paused canary creates the new ReplicaSet at 0 replicas and scales nothing; pods
//! created meanwhile (scale-up, eviction) come from the stable ReplicaSet, the **old**
//! template. So, as for a Deployment, a change that drops a binding secret rolls now.
//!
//! Declined (accepted unchanged): a blue-green Rollout, which scales its new ReplicaSet up even
//! while paused, and one with `spec.workloadRef`, which has no pod template of its own (binding
//! happens in the Deployment it references).

use serde_json::Value;

use crate::view::items;
use crate::workload::{generation_stale, Control, Field, Json, Kind, StatusMember, Workload};
use crate::workload::{OBSERVED_GENERATION, READS_GENERATION, TEMPLATE};

/// The replaced `spec.paused` of a Rollout, as JSON.
pub const ORIGINAL_ROLLOUT_PAUSED_ANNOTATION: &str = "restage-gate.io/original-rollout-paused";

pub struct Rollout;

const BLUE_GREEN: Field = Field::new(&["spec", "strategy", "blueGreen"], Json::Object);
const WORKLOAD_REF: Field = Field::new(&["spec", "workloadRef"], Json::Object);
const PAUSE_CONDITIONS: StatusMember =
    StatusMember::new("pauseConditions", Json::ListOf(&["reason"]));
const ABORT: StatusMember = StatusMember::new("abort", Json::Boolean);
const CURRENT_POD_HASH: StatusMember = StatusMember::new("currentPodHash", Json::String);
const STABLE_RS: StatusMember = StatusMember::new("stableRS", Json::String);

const DECLARED: Kind = Kind {
    group: "argoproj.io",
    version: "v1alpha1",
    kind: "Rollout",
    resource: "rollouts",
    template: TEMPLATE,
    control: Control::pause(&["spec", "paused"]),
    remembered: ORIGINAL_ROLLOUT_PAUSED_ANNOTATION,
    reads: &[READS_GENERATION, BLUE_GREEN, WORKLOAD_REF],
    // observedGeneration is a string of digits here, which an integer reading takes.
    status: &[
        OBSERVED_GENERATION,
        PAUSE_CONDITIONS,
        ABORT,
        CURRENT_POD_HASH,
        STABLE_RS,
    ],
};

/// `kubectl patch rollout/NAME -n NAMESPACE --type merge -p 'PATCH'`: kubectl's `rollout`
/// verbs do not know a Rollout.
fn patch(namespace: &str, name: &str, patch: &str) -> String {
    [
        "kubectl patch rollout/",
        name,
        " -n ",
        namespace,
        " --type merge -p '",
        patch,
        "'",
    ]
    .concat()
}

impl Workload for Rollout {
    fn declared(&self) -> &'static Kind {
        &DECLARED
    }

    fn holds(&self, _old: &Value, new: &Value) -> bool {
        BLUE_GREEN.of(new).is_none() && WORKLOAD_REF.of(new).is_none()
    }

    /// Anything but a fully promoted canary: the controller has not caught up, a pause step or
    /// an abort holds it, or the current pod template is not yet the stable one:
    /// `status.observedGeneration` (a string) < `metadata.generation`, `status.pauseConditions`
    /// not empty, `status.abort`, or `status.currentPodHash` ≠ `status.stableRS`.
    fn rolling_out(&self, old: &Value, status: &Value) -> bool {
        let paused = items(PAUSE_CONDITIONS.of(status)).next().is_some();
        let aborted = ABORT.of(status).and_then(Value::as_bool) == Some(true);
        let unpromoted = CURRENT_POD_HASH.of(status) != STABLE_RS.of(status);
        generation_stale(old, status) || paused || aborted || unpromoted
    }

    /// A template annotation change restages it (`kubectl argo rollouts restart` only evicts
    /// pods, which come back from their own ReplicaSet).
    fn restart_command(&self, namespace: &str, name: &str) -> String {
        patch(
            namespace,
            name,
            r#"{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"'"$(date -u +%FT%TZ)"'"}}}}}"#,
        )
    }

    /// Unpausing releases the hold, as Argo CD's resume action does.
    fn apply_held_now(&self, namespace: &str, name: &str) -> String {
        patch(namespace, name, r#"{"spec":{"paused":false}}"#)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::classify::Change;
    use crate::template::classify::{BindingDelta, ChangeKind};
    use serde_json::json;

    const ROLLOUT: &dyn Workload = &Rollout;

    fn promoted() -> Value {
        json!({"metadata": {"generation": 3},
            "spec": {"strategy": {"canary": {"steps": [{"setWeight": 20}]}}, "template": {}},
            "status": {"observedGeneration": "3", "currentPodHash": "6b8d7c9f5",
                "stableRS": "6b8d7c9f5", "pauseConditions": []}})
    }

    #[test]
    fn only_a_fully_promoted_canary_has_no_rollout_in_progress() {
        assert!(!ROLLOUT.rollout_in_progress(&promoted()));
        for (member, value) in [
            ("observedGeneration", json!("2")),
            ("currentPodHash", json!("7f4c8d6b9")),
            (
                "pauseConditions",
                json!([{"reason": "CanaryPauseStep", "startTime": "2026-11-20T08:20:00Z"}]),
            ),
            ("abort", json!(true)),
        ] {
            let mut r = promoted();
            r["status"][member] = value;
            assert!(ROLLOUT.rollout_in_progress(&r), "{member}");
        }
        let mut no_status = promoted();
        no_status.as_object_mut().map(|o| o.remove("status"));
        assert!(!ROLLOUT.rollout_in_progress(&no_status));
    }

    #[test]
    fn blue_green_and_workload_ref_rollouts_are_declined() {
        let canary = promoted();
        assert!(Rollout.holds(&canary, &canary));
        let mut blue_green = promoted();
        blue_green["spec"]["strategy"] = json!({"blueGreen": {"activeService": "orders"}});
        assert!(!Rollout.holds(&canary, &blue_green));
        let referenced = json!({"spec": {"workloadRef":
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "orders"}}});
        assert!(!Rollout.holds(&referenced, &referenced));
    }

    #[test]
    fn a_change_that_drops_a_binding_secret_rolls_now() {
        let change = |dropped: &[&str]| Change {
            kind: ChangeKind::BindingOnly,
            emptied: false,
            delta: BindingDelta::default(),
            dropped_secrets: dropped.iter().map(|s| s.to_string()).collect(),
        };
        assert_eq!(Rollout.must_roll_now(&change(&[])), None);
        let switched = Rollout.must_roll_now(&change(&["old-secret"]));
        assert!(switched.is_some_and(
            |why| why.ends_with("a paused Rollout would start new pods from the old template")
        ));
    }

    #[test]
    fn its_commands_patch_the_rollout_not_kubectl_rollout() {
        assert_eq!(
            Rollout.apply_held_now("apps", "orders"),
            r#"kubectl patch rollout/orders -n apps --type merge -p '{"spec":{"paused":false}}'"#
        );
        let restart = Rollout.restart_command("apps", "orders");
        assert!(
            restart.starts_with("kubectl patch rollout/orders -n apps --type merge -p '")
                && restart.contains("kubectl.kubernetes.io/restartedAt"),
            "{restart}"
        );
    }
}
