//! Workloads as restage-gate leaves them when it holds them, and where its markers sit. Every
//! key comes from `restage_gate::markers`; every per-kind value from `restage_gate::workload`.

use restage_gate::markers::{self, Hold, HELD_LABEL, HELD_SINCE_ANNOTATION, PENDING_ANNOTATION};
use restage_gate::workload::{self, Workload};
use serde_json::Value;

use crate::edit::pointer;

/// Whether a label or annotation key is one of the policy's.
pub fn is_marker(key: &str) -> bool {
    key == HELD_LABEL || workload::marker_annotations().contains(&key)
}

/// The kind an object says it is (`apiVersion` and `kind`), which must be one the policy
/// holds: the policy's own lookup.
pub fn kind_of(object: &Value) -> &'static dyn Workload {
    let group = object["apiVersion"]
        .as_str()
        .and_then(|v| v.split_once('/'));
    let group = group.map_or("", |(group, _)| group);
    let kind = object["kind"].as_str().unwrap_or_default();
    workload::of(group, kind)
        .unwrap_or_else(|| panic!("not a kind restage-gate holds: apiVersion {group}, kind {kind}"))
}

/// The annotation that remembers the control a hold replaced, for a kind.
pub fn remembered_annotation(kind: &dyn Workload) -> &'static str {
    kind.remembered_annotation()
}

/// The control the API server gives a kind when a request has none.
pub fn default_control(kind: &dyn Workload) -> Value {
    kind.default_control()
}

/// The control that holds a kind's rollout.
pub fn held_control(kind: &dyn Workload) -> Value {
    kind.held_control()
}

/// The control's JSON pointer: `/spec/updateStrategy`, `/spec/paused`.
pub fn control_path(kind: &dyn Workload) -> String {
    pointer(kind.control_path())
}

/// `object` as the policy leaves it when it holds `pending` since `since`, with the API
/// default control remembered.
pub fn held(object: Value, pending: &str, since: &str) -> Value {
    let remembered = default_control(kind_of(&object));
    held_remembering(object, &remembered, pending, since)
}

/// `object` held, remembering `remembered` as the control to restore.
pub fn held_remembering(
    mut object: Value,
    remembered: &Value,
    pending: &str,
    since: &str,
) -> Value {
    let kind = kind_of(&object);
    let hold = Hold {
        remembered_key: kind.remembered_annotation(),
        remembered: remembered.to_string(),
        held_since: since.into(),
        pending: pending.into(),
    };
    // the fixtures are well-formed workloads, which always take the markers
    workload::hold(&mut object, kind, &hold).expect("the workload takes the markers");
    object
}

pub fn is_held(object: &Value) -> bool {
    markers::is_held(object)
}

pub fn annotation<'a>(object: &'a Value, key: &str) -> Option<&'a str> {
    object.pointer("/metadata/annotations")?.get(key)?.as_str()
}

pub fn annotation_path(key: &str) -> String {
    pointer(&["metadata", "annotations", key])
}

pub fn label_path(key: &str) -> String {
    pointer(&["metadata", "labels", key])
}

/// The paths of the label and the annotations a hold writes on a kind, in sorted order.
pub fn marker_paths(kind: &dyn Workload) -> Vec<String> {
    let mut paths = vec![
        annotation_path(HELD_SINCE_ANNOTATION),
        annotation_path(kind.remembered_annotation()),
        annotation_path(PENDING_ANNOTATION),
        label_path(HELD_LABEL),
    ];
    paths.sort();
    paths
}

/// The policy's keys an object carries in its labels and annotations.
pub fn markers_on(object: &Value) -> Vec<String> {
    ["labels", "annotations"]
        .iter()
        .filter_map(|map| object["metadata"][map].as_object())
        .flat_map(|map| map.keys())
        .filter(|key| is_marker(key))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::unbound;

    #[test]
    fn a_held_workload_carries_every_marker_of_its_kind() {
        for (kind, remembered) in workload::kinds().map(|w| (w, w.remembered_annotation())) {
            let object = held(unbound(kind), "+db", "2026-12-01T09:00:00Z");
            assert!(is_held(&object), "{kind:?}");
            assert_eq!(
                object.pointer(&control_path(kind)),
                Some(&held_control(kind))
            );
            assert_eq!(
                annotation(&object, remembered),
                Some(default_control(kind).to_string().as_str())
            );
            let mut on = markers_on(&object);
            on.sort();
            let mut want = vec![
                HELD_LABEL,
                HELD_SINCE_ANNOTATION,
                PENDING_ANNOTATION,
                remembered,
            ];
            want.sort();
            assert_eq!(on, want, "{kind:?}");
            assert_eq!(marker_paths(kind).len(), 4);
        }
    }
}
