//! What the kinds held with `spec.paused: true` share. A paused kind creates the pods it needs
//! meanwhile (scale-up, eviction) from its **old** template, so only changes that add bindings,
//! or change them without changing which secrets they project, may wait; one that drops a
//! binding secret (which the unbind deletes) rolls now, or new pods would hang on the deleted
//! secret. Unpausing is the owner's resume, and on a held workload a release.

use super::{Field, Json};
use crate::template::classify::Change;

/// `spec.paused`, a boolean.
pub const CONTROL: Field = Field::new(&["spec", "paused"], Json::Boolean);

/// Why a change that drops a binding secret must not wait on a paused `kind`.
pub fn roll_now(change: &Change, kind: &str) -> Option<String> {
    change.removal().map(|what| {
        [
            what.as_str(),
            "; a paused ",
            kind,
            " would start new pods from the old template",
        ]
        .concat()
    })
}

/// The `Workload` answers of a kind held with a pause, written once for every such kind (a
/// second blanket `impl Workload` beside `StrategyKind`'s would overlap it).
macro_rules! held_with_a_pause {
    () => {
        fn held_control(&self) -> serde_json::Value {
            serde_json::Value::Bool(true)
        }

        fn stops_rollouts(&self, control: Option<&serde_json::Value>) -> bool {
            control.and_then(serde_json::Value::as_bool) == Some(true)
        }

        fn default_control(&self) -> serde_json::Value {
            serde_json::Value::Bool(false)
        }

        fn accepts(&self, control: &serde_json::Value) -> bool {
            control.is_boolean()
        }

        fn must_roll_now(&self, change: &$crate::template::classify::Change) -> Option<String> {
            $crate::workload::pause::roll_now(change, self.kind())
        }

        fn resume_releases(&self) -> bool {
            true
        }
    };
}
pub(crate) use held_with_a_pause;
