//! `apps/v1` DaemonSet: held with `updateStrategy: OnDelete`. Under OnDelete, pods for new
//! nodes and pods replacing deleted ones come from the current template, as for a StatefulSet.

use serde_json::{json, Map, Value};

use crate::workload::update_strategy::{int32_at_least, is_zero, percent_at_least, Strategy, PATH};
use crate::workload::{generation_stale, Control, Json, Kind, StatusMember, Workload};
use crate::workload::{
    OBSERVED_GENERATION, ORIGINAL_STRATEGY_ANNOTATION, READS_GENERATION, TEMPLATE,
};

pub struct DaemonSet;

const DESIRED: StatusMember = StatusMember::new("desiredNumberScheduled", Json::Integer);
const UPDATED: StatusMember = StatusMember::new("updatedNumberScheduled", Json::Integer);

const DECLARED: Kind = Kind {
    group: "apps",
    version: "v1",
    kind: "DaemonSet",
    resource: "daemonsets",
    template: TEMPLATE,
    control: Control::strategy(PATH, &STRATEGY),
    remembered: ORIGINAL_STRATEGY_ANNOTATION,
    reads: &[READS_GENERATION],
    status: &[OBSERVED_GENERATION, DESIRED, UPDATED],
};

const STRATEGY: Strategy = Strategy {
    default: || json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
    rolling_fields: &["maxUnavailable", "maxSurge"],
    accepts_rolling_update,
};

/// `maxUnavailable` and `maxSurge`: an int32 ≥ 0 or 0%–100%, not both zero (an absent
/// `maxUnavailable` defaults to 1).
fn accepts_rolling_update(fields: &Map<String, Value>) -> bool {
    let valid = |key| {
        fields
            .get(key)
            .is_none_or(|v: &Value| v.is_null() || int32_at_least(v, 0) || percent_at_least(v, 0))
    };
    let surge = fields.get("maxSurge").filter(|s| !s.is_null());
    let both_zero = is_zero(fields.get("maxUnavailable")) && surge.is_none_or(|s| is_zero(Some(s)));
    valid("maxUnavailable") && valid("maxSurge") && !both_zero
}

impl Workload for DaemonSet {
    fn declared(&self) -> &'static Kind {
        &DECLARED
    }

    /// The controller has not caught up, or not every node runs an updated pod yet:
    /// `status.observedGeneration` < `metadata.generation`, or `status.updatedNumberScheduled`
    /// < `status.desiredNumberScheduled`.
    fn rolling_out(&self, old: &Value, status: &Value) -> bool {
        let behind = DESIRED
            .integer(status)
            .is_some_and(|desired| UPDATED.integer(status).unwrap_or(0) < desired);
        generation_stale(old, status) || behind
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::update_strategy as strategy;

    const DAEMON_SET: &dyn Workload = &DaemonSet;

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
            assert_eq!(DAEMON_SET.accepts(&strategy), want, "{strategy}");
        }
        assert!(DAEMON_SET.accepts(&DAEMON_SET.default_control()));
    }

    #[test]
    fn rollout_in_progress_reads_the_scheduled_pods() {
        let base = json!({"metadata": {"generation": 2}, "spec": {"updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": 2, "desiredNumberScheduled": 4, "updatedNumberScheduled": 4}});
        assert!(!DAEMON_SET.rollout_in_progress(&base));
        for (path, value) in [
            ("/status/observedGeneration", json!(1)),
            ("/status/updatedNumberScheduled", json!(3)),
        ] {
            let mut ds = base.clone();
            *ds.pointer_mut(path).expect("field") = value;
            assert!(DAEMON_SET.rollout_in_progress(&ds), "{path}");
            ds["spec"]["updateStrategy"] = strategy::on_delete();
            assert!(
                !DAEMON_SET.rollout_in_progress(&ds),
                "OnDelete never rolls: {path}"
            );
        }
        assert!(!DAEMON_SET.rollout_in_progress(&json!({"spec": {}})));
    }
}
