//! What a held workload carries on its own metadata, never in the pod template: the label
//! operators select held workloads by, the remembered rollout control, when the hold began and
//! what it holds; and the annotation an operator sets to release it.

use serde_json::{json, Value};

use crate::view::{at, existing_map_at, map_at, set, Unwritable};

pub const HELD_LABEL: &str = "restage-gate.io/held";
/// Every label and annotation the policy reads or writes starts with it.
pub const MARKER_PREFIX: &str = "restage-gate.io/";
pub const HELD_SINCE_ANNOTATION: &str = "restage-gate.io/held-since";
pub const PENDING_ANNOTATION: &str = "restage-gate.io/pending";
/// Set by an operator to apply the held changes now: any value but [`RELEASE_IN_WINDOW`].
pub const RELEASE_ANNOTATION: &str = "restage-gate.io/release";
/// The release annotation's value that releases only while a maintenance window is open, so that
/// a scheduled writer needs to know nothing of the windows: the settings stay their one source.
pub const RELEASE_IN_WINDOW: &str = "window";

/// The annotations every kind shares; each kind adds the one that remembers its control
/// (all of them: `workload::marker_annotations`).
pub const SHARED_ANNOTATIONS: [&str; 3] = [
    HELD_SINCE_ANNOTATION,
    PENDING_ANNOTATION,
    RELEASE_ANNOTATION,
];

/// The markers a held workload leaves admission with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The annotation that remembers the replaced control (per kind).
    pub remembered_key: &'static str,
    /// The replaced control, as JSON.
    pub remembered: String,
    /// RFC 3339 UTC, the time of the first held change.
    pub held_since: String,
    /// Held binding changes by binding name: `+added -removed ~changed`.
    pub pending: String,
}

/// The markers found on an object, each as it is written there.
#[derive(Debug, Clone, Copy, Default)]
pub struct Markers<'a> {
    pub remembered: Option<&'a str>,
    pub held_since: Option<&'a str>,
    pub pending: Option<&'a str>,
}

pub fn is_held(object: &Value) -> bool {
    at(object, &["metadata", "labels", HELD_LABEL]).and_then(Value::as_str) == Some("true")
}

/// What the release annotation on an object asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseRequest {
    Now,
    /// Release if a maintenance window is open; otherwise only drop the request.
    InWindow,
}

pub fn release_request(object: &Value) -> Option<ReleaseRequest> {
    let value = at(object, &["metadata", "annotations", RELEASE_ANNOTATION])?;
    match value.as_str() {
        _ if value.is_null() => None,
        Some(RELEASE_IN_WINDOW) => Some(ReleaseRequest::InWindow),
        _ => Some(ReleaseRequest::Now),
    }
}

pub fn read<'a>(object: &'a Value, remembered_key: &str) -> Markers<'a> {
    let annotations = at(object, &["metadata", "annotations"]);
    let annotation = |key| annotations.and_then(|a| a.get(key)).and_then(Value::as_str);
    Markers {
        remembered: annotation(remembered_key),
        held_since: annotation(HELD_SINCE_ANNOTATION),
        pending: annotation(PENDING_ANNOTATION),
    }
}

/// Writes the label and every annotation of `hold`. Returns whether anything changed.
pub fn write(object: &mut Value, hold: &Hold) -> Result<bool, Unwritable> {
    let labels = map_at(object, &["metadata", "labels"])?;
    let mut changed = set(labels, HELD_LABEL, json!("true"));
    let annotations = map_at(object, &["metadata", "annotations"])?;
    for (key, value) in [
        (hold.remembered_key, &hold.remembered),
        (HELD_SINCE_ANNOTATION, &hold.held_since),
        (PENDING_ANNOTATION, &hold.pending),
    ] {
        changed |= set(annotations, key, json!(value));
    }
    Ok(changed)
}

/// Removes the label, every marker annotation (the shared ones and `remembered`, each kind's
/// own) and the release request. Returns whether anything changed.
pub fn remove<'k>(
    object: &mut Value,
    remembered: impl IntoIterator<Item = &'k str>,
) -> Result<bool, Unwritable> {
    let mut changed = false;
    if let Some(labels) = existing_map_at(object, &["metadata", "labels"])? {
        changed |= labels.remove(HELD_LABEL).is_some();
    }
    if let Some(annotations) = existing_map_at(object, &["metadata", "annotations"])? {
        for key in SHARED_ANNOTATIONS.into_iter().chain(remembered) {
            changed |= annotations.remove(key).is_some();
        }
    }
    Ok(changed)
}

/// Removes only the release request (on a workload that is not held).
pub fn remove_release_request(object: &mut Value) -> Result<bool, Unwritable> {
    Ok(existing_map_at(object, &["metadata", "annotations"])?
        .is_some_and(|a| a.remove(RELEASE_ANNOTATION).is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind's remembered-control annotation (the kinds' own are theirs).
    const REMEMBERED: &str = "restage-gate.io/original-control";

    fn hold() -> Hold {
        Hold {
            remembered_key: REMEMBERED,
            remembered: r#"{"rollingUpdate":{"partition":0},"type":"RollingUpdate"}"#.into(),
            held_since: "2026-12-02T16:51:06Z".into(),
            pending: "+orders-db".into(),
        }
    }

    #[test]
    fn write_sets_the_label_and_every_annotation_once() {
        let mut sts = json!({"metadata": {"name": "app"}, "spec": {}});
        assert_eq!(write(&mut sts, &hold()), Ok(true));
        assert!(is_held(&sts));
        let m = read(&sts, REMEMBERED);
        assert_eq!(m.remembered, Some(hold().remembered.as_str()));
        assert_eq!(m.held_since, Some("2026-12-02T16:51:06Z"));
        assert_eq!(m.pending, Some("+orders-db"));
        assert_eq!(
            write(&mut sts, &hold()),
            Ok(false),
            "writing twice changes nothing"
        );
    }

    #[test]
    fn remove_drops_every_marker_and_the_release_request_only() {
        let mut sts = json!({"metadata": {"labels": {"app": "x"},
            "annotations": {"keep": "me", "restage-gate.io/release": "now"}}, "spec": {}});
        write(&mut sts, &hold()).expect("writable");
        assert_eq!(remove(&mut sts, [REMEMBERED]), Ok(true));
        assert_eq!(
            sts,
            json!({"metadata": {"labels": {"app": "x"}, "annotations": {"keep": "me"}}, "spec": {}})
        );
        assert_eq!(remove(&mut sts, []), Ok(false));
    }

    #[test]
    fn garbage_metadata_is_unwritable_not_a_panic() {
        let mut sts = json!({"metadata": {"labels": "oops"}, "spec": {}});
        assert_eq!(
            write(&mut sts, &hold()),
            Err(Unwritable("metadata.labels is not a JSON object".into()))
        );
        assert!(
            remove(&mut json!({"metadata": 3}), []).is_ok(),
            "no marker to remove"
        );
        assert!(remove(&mut json!({"metadata": {"labels": 3}}), []).is_err());
    }

    #[test]
    fn a_release_request_is_any_value_of_the_annotation_and_window_waits_for_one() {
        use ReleaseRequest::{InWindow, Now};
        for (value, want) in [
            (json!("now"), Some(Now)),
            (json!(""), Some(Now)),
            (json!("Window"), Some(Now)),
            (json!(true), Some(Now)),
            (json!(RELEASE_IN_WINDOW), Some(InWindow)),
            (Value::Null, None),
        ] {
            let sts = json!({"metadata": {"annotations": {RELEASE_ANNOTATION: value}}});
            assert_eq!(release_request(&sts), want, "{value}");
        }
        assert_eq!(release_request(&json!({"metadata": {}})), None);
    }
}
