//! `apps/v1` DaemonSet: held with `updateStrategy: OnDelete`. Under OnDelete, pods for new
//! nodes and pods replacing deleted ones come from the current template, as for a StatefulSet.

use serde_json::{json, Value};

use super::update_strategy::{self as strategy, int32_at_least, is_zero, percent_at_least};
use super::Workload;
use crate::json::at;
use crate::markers::ORIGINAL_STRATEGY_ANNOTATION;

pub struct DaemonSet;

impl Workload for DaemonSet {
    fn kind(&self) -> &'static str {
        "DaemonSet"
    }

    fn control_path(&self) -> &'static [&'static str] {
        &strategy::PATH
    }

    fn held_control(&self) -> Value {
        strategy::on_delete()
    }

    fn stops_rollouts(&self, control: Option<&Value>) -> bool {
        strategy::is_on_delete(control)
    }

    fn default_control(&self) -> Value {
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    }

    /// `maxUnavailable` and `maxSurge`: an int32 ≥ 0 or 0%–100%, not both zero (an absent
    /// `maxUnavailable` defaults to 1).
    fn accepts(&self, control: &Value) -> bool {
        strategy::accepts(control, &["maxUnavailable", "maxSurge"], |fields| {
            let valid = |key| {
                fields.get(key).is_none_or(|v: &Value| {
                    v.is_null() || int32_at_least(v, 0) || percent_at_least(v, 0)
                })
            };
            let both_zero = is_zero(fields.get("maxUnavailable"))
                && !fields
                    .get("maxSurge")
                    .is_some_and(|s| !s.is_null() && !is_zero(Some(s)));
            valid("maxUnavailable") && valid("maxSurge") && !both_zero
        })
    }

    fn remembered_annotation(&self) -> &'static str {
        ORIGINAL_STRATEGY_ANNOTATION
    }

    /// A RollingUpdate whose controller has not caught up, or that has not updated the pods of
    /// every node yet.
    fn rollout_in_progress(&self, old: &Value) -> bool {
        let Some(status) = old.get("status").filter(|s| s.is_object()) else {
            return false;
        };
        let int = |v: Option<&Value>| v.and_then(Value::as_i64);
        let stale = matches!(
            (int(status.get("observedGeneration")), int(at(old, &["metadata", "generation"]))),
            (Some(observed), Some(generation)) if observed < generation
        );
        let behind = matches!(
            (int(status.get("updatedNumberScheduled")), int(status.get("desiredNumberScheduled"))),
            (updated, Some(desired)) if updated.unwrap_or(0) < desired
        );
        strategy::is_rolling(self.control(old)) && (stale || behind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_strategies_the_api_server_accepts_are_restorable() {
        let rolling = |r: Value| json!({"type": "RollingUpdate", "rollingUpdate": r});
        let cases = [
            (json!({"type": "RollingUpdate"}), true),
            (json!({"type": "OnDelete"}), true),
            (rolling(json!({"maxUnavailable": 1, "maxSurge": 0})), true),
            (
                rolling(json!({"maxUnavailable": 0, "maxSurge": "10%"})),
                true,
            ),
            (rolling(json!({"maxUnavailable": "20%"})), true),
            (rolling(json!({"maxSurge": 0})), true),
            (rolling(json!({"maxUnavailable": 0, "maxSurge": 0})), false),
            (rolling(json!({"maxUnavailable": "0%"})), false),
            (rolling(json!({"maxUnavailable": 0})), false),
            (rolling(json!({"maxUnavailable": -1})), false),
            (rolling(json!({"maxUnavailable": "120%"})), false),
            (rolling(json!({"partition": 0})), false),
            (
                json!({"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 1}}),
                false,
            ),
            (json!({"type": "Recreate"}), false),
            (json!([]), false),
        ];
        for (strategy, want) in cases {
            assert_eq!(DaemonSet.accepts(&strategy), want, "{strategy}");
        }
        assert!(DaemonSet.accepts(&DaemonSet.default_control()));
    }

    #[test]
    fn rollout_in_progress_reads_the_scheduled_pods() {
        let base = json!({"metadata": {"generation": 2}, "spec": {"updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": 2, "desiredNumberScheduled": 4, "updatedNumberScheduled": 4}});
        assert!(!DaemonSet.rollout_in_progress(&base));
        for (path, value) in [
            ("/status/observedGeneration", json!(1)),
            ("/status/updatedNumberScheduled", json!(3)),
        ] {
            let mut ds = base.clone();
            *ds.pointer_mut(path).expect("field") = value;
            assert!(DaemonSet.rollout_in_progress(&ds), "{path}");
            ds["spec"]["updateStrategy"] = strategy::on_delete();
            assert!(
                !DaemonSet.rollout_in_progress(&ds),
                "OnDelete never rolls: {path}"
            );
        }
        assert!(!DaemonSet.rollout_in_progress(&json!({"spec": {}})));
    }
}
