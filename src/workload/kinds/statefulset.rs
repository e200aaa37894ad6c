//! `apps/v1` StatefulSet: held with `updateStrategy: OnDelete` (Korifi's app workload).

use serde_json::{json, Map, Value};

use crate::workload::update_strategy::{int32_at_least, percent_at_least, Strategy, PATH};
use crate::workload::{generation_stale, replicas, Control, Json, Kind, StatusMember};
use crate::workload::{Workload, ORIGINAL_STRATEGY_ANNOTATION};
use crate::workload::{OBSERVED_GENERATION, READS_GENERATION, READS_REPLICAS, TEMPLATE};

pub struct StatefulSet;

const CURRENT_REVISION: StatusMember = StatusMember::new("currentRevision", Json::String);
const UPDATE_REVISION: StatusMember = StatusMember::new("updateRevision", Json::String);
const UPDATED_REPLICAS: StatusMember = StatusMember::new("updatedReplicas", Json::Integer);

const DECLARED: Kind = Kind {
    group: "apps",
    version: "v1",
    kind: "StatefulSet",
    resource: "statefulsets",
    template: TEMPLATE,
    control: Control::strategy(PATH, &STRATEGY),
    remembered: ORIGINAL_STRATEGY_ANNOTATION,
    reads: &[READS_GENERATION, READS_REPLICAS],
    status: &[
        OBSERVED_GENERATION,
        CURRENT_REVISION,
        UPDATE_REVISION,
        UPDATED_REPLICAS,
    ],
};

const STRATEGY: Strategy = Strategy {
    default: || json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
    rolling_fields: &["partition", "maxUnavailable"],
    accepts_rolling_update,
};

/// `partition`: an int32 ≥ 0; `maxUnavailable`: a positive int32 or 1%–100%.
fn accepts_rolling_update(fields: &Map<String, Value>) -> bool {
    let partition = fields
        .get("partition")
        .is_none_or(|p| p.is_null() || int32_at_least(p, 0));
    let max_unavailable = fields
        .get("maxUnavailable")
        .is_none_or(|m| m.is_null() || int32_at_least(m, 1) || percent_at_least(m, 1));
    partition && max_unavailable
}

impl Workload for StatefulSet {
    fn declared(&self) -> &'static Kind {
        &DECLARED
    }

    /// The controller has not caught up, the revisions differ, or not every pod is updated:
    /// `status.observedGeneration` < `metadata.generation`, `status.updateRevision` ≠
    /// `status.currentRevision`, or `status.updatedReplicas` < `spec.replicas`.
    fn rolling_out(&self, old: &Value, status: &Value) -> bool {
        let revisions_differ = match (CURRENT_REVISION.of(status), UPDATE_REVISION.of(status)) {
            (Some(current), Some(update)) => current != update,
            _ => false,
        };
        let behind = UPDATED_REPLICAS.integer(status).unwrap_or(0) < replicas(old);
        generation_stale(old, status) || revisions_differ || behind
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::update_strategy as strategy;

    const STATEFUL_SET: &dyn Workload = &StatefulSet;

    #[test]
    fn only_strategies_the_api_server_accepts_are_restorable() {
        let cases = [
            (json!({"type": "RollingUpdate"}), true),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": null}),
                true,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
                true,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 3, "maxUnavailable": 2}}),
                true,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}}),
                true,
            ),
            (json!({"type": "OnDelete"}), true),
            (
                json!({"type": "OnDelete", "rollingUpdate": {"partition": 0}}),
                false,
            ),
            (json!({"type": "Recreate"}), false),
            (json!({"rollingUpdate": {"partition": 0}}), false),
            (json!({"type": "RollingUpdate", "extra": 1}), false),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2_147_483_648_i64}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1.5}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1.0}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "0%"}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "150%"}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "two"}}),
                false,
            ),
            (
                json!({"type": "RollingUpdate", "rollingUpdate": "partition 0"}),
                false,
            ),
            (json!("RollingUpdate"), false),
            (json!(null), false),
        ];
        for (strategy, want) in cases {
            assert_eq!(STATEFUL_SET.accepts(&strategy), want, "{strategy}");
        }
        assert!(STATEFUL_SET.accepts(&STATEFUL_SET.default_control()));
    }

    #[test]
    fn rollout_in_progress_reads_status_of_a_rolling_update() {
        let base = json!({"metadata": {"generation": 4}, "spec": {"replicas": 3,
            "updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": 4, "currentRevision": "r1", "updateRevision": "r1",
                "updatedReplicas": 3, "replicas": 3}});
        assert!(!STATEFUL_SET.rollout_in_progress(&base));
        let edits = [
            ("/status/observedGeneration", json!(3)),
            ("/status/updateRevision", json!("r2")),
            ("/status/updatedReplicas", json!(1)),
        ];
        for (path, value) in edits {
            let mut sts = base.clone();
            *sts.pointer_mut(path).expect("field") = value;
            assert!(STATEFUL_SET.rollout_in_progress(&sts), "{path}");
            sts["spec"]["updateStrategy"] = strategy::on_delete();
            assert!(
                !STATEFUL_SET.rollout_in_progress(&sts),
                "OnDelete never rolls: {path}"
            );
        }
        let mut no_status = base.clone();
        no_status.as_object_mut().expect("object").remove("status");
        assert!(!STATEFUL_SET.rollout_in_progress(&no_status));
    }
}
