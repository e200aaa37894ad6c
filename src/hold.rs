//! Hold and release (DESIGN.md §2): a held workload has `updateStrategy: OnDelete` and the
//! policy's markers on its own metadata, never in the pod template. Every edit is made in place
//! on the request's raw JSON, so fields unknown to the policy stay exactly as they came.

use serde_json::{json, Map, Value};

use crate::artefacts::at;
use crate::classify::BindingDelta;

pub const HELD_LABEL: &str = "restage-gate.io/held";
pub const ORIGINAL_STRATEGY_ANNOTATION: &str = "restage-gate.io/original-update-strategy";
pub const HELD_SINCE_ANNOTATION: &str = "restage-gate.io/held-since";
pub const PENDING_ANNOTATION: &str = "restage-gate.io/pending";

/// The markers a held workload carries, as written on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// The replaced `spec.updateStrategy`, as JSON.
    pub original_strategy: String,
    /// RFC 3339 UTC, the time of the first held change.
    pub held_since: String,
    /// Held binding changes by binding name: `+added -removed ~changed`.
    pub pending: String,
}

/// The markers found on an object, each as it is written there.
#[derive(Debug, Clone, Copy, Default)]
pub struct Markers<'a> {
    pub original_strategy: Option<&'a str>,
    pub held_since: Option<&'a str>,
    pub pending: Option<&'a str>,
}

/// A request whose object cannot carry the markers (`metadata` or its maps are not objects).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwritable(pub String);

pub fn is_held(object: &Value) -> bool {
    at(object, &["metadata", "labels"])
        .and_then(|labels| labels.get(HELD_LABEL))
        .and_then(Value::as_str)
        == Some("true")
}

pub fn markers(object: &Value) -> Markers<'_> {
    let annotation = |key| {
        at(object, &["metadata", "annotations"])
            .and_then(|a| a.get(key))
            .and_then(Value::as_str)
    };
    Markers {
        original_strategy: annotation(ORIGINAL_STRATEGY_ANNOTATION),
        held_since: annotation(HELD_SINCE_ANNOTATION),
        pending: annotation(PENDING_ANNOTATION),
    }
}

pub fn update_strategy(object: &Value) -> Option<&Value> {
    at(object, &["spec", "updateStrategy"])
}

pub fn on_delete() -> Value {
    json!({"type": "OnDelete"})
}

/// What the API server defaults a StatefulSet's strategy to.
pub fn default_strategy() -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
}

pub fn is_on_delete(strategy: Option<&Value>) -> bool {
    strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some("OnDelete")
}

/// Makes the object leave admission held: OnDelete and every marker. Replaces the whole
/// strategy, since the API server refuses `rollingUpdate` next to OnDelete.
/// Returns whether anything changed.
pub fn apply(object: &mut Value, hold: &Hold) -> Result<bool, Unwritable> {
    let mut changed = set(map_at(object, &["spec"])?, "updateStrategy", on_delete());
    let labels = map_at(object, &["metadata", "labels"])?;
    changed |= set(labels, HELD_LABEL, json!("true"));
    let annotations = map_at(object, &["metadata", "annotations"])?;
    changed |= set(
        annotations,
        ORIGINAL_STRATEGY_ANNOTATION,
        json!(hold.original_strategy),
    );
    changed |= set(annotations, HELD_SINCE_ANNOTATION, json!(hold.held_since));
    changed |= set(annotations, PENDING_ANNOTATION, json!(hold.pending));
    Ok(changed)
}

/// Restores `strategy` and removes every marker. Returns whether anything changed.
pub fn release(object: &mut Value, strategy: Value) -> Result<bool, Unwritable> {
    let mut changed = set(map_at(object, &["spec"])?, "updateStrategy", strategy);
    if let Some(labels) = existing_map(object, "labels")? {
        changed |= labels.remove(HELD_LABEL).is_some();
    }
    if let Some(annotations) = existing_map(object, "annotations")? {
        for key in [
            ORIGINAL_STRATEGY_ANNOTATION,
            HELD_SINCE_ANNOTATION,
            PENDING_ANNOTATION,
        ] {
            changed |= annotations.remove(key).is_some();
        }
    }
    Ok(changed)
}

/// A workload whose rollout is under way (DESIGN.md §3): holding it would freeze a
/// half-finished rollout, so a binding change joins it instead. Read from `oldObject`.
pub fn rollout_in_progress(old: &Value) -> bool {
    let rolling = update_strategy(old)
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .is_none_or(|t| t == "RollingUpdate");
    let Some(status) = old.get("status").filter(|s| s.is_object()) else {
        return false;
    };
    let int = |v: Option<&Value>| v.and_then(Value::as_i64);
    let generation = int(at(old, &["metadata", "generation"]));
    let observed = int(status.get("observedGeneration"));
    let stale = matches!((observed, generation), (Some(o), Some(g)) if o < g);
    let revisions_differ = match (status.get("currentRevision"), status.get("updateRevision")) {
        (Some(current), Some(update)) => current != update,
        _ => false,
    };
    let replicas = int(at(old, &["spec", "replicas"])).unwrap_or(1);
    let behind = int(status.get("updatedReplicas")).unwrap_or(0) < replicas;
    rolling && (stale || revisions_differ || behind)
}

/// Folds a binding change into the pending summary. Tokens are by binding name: a binding
/// added and then removed while held cancels out; removed then added again is `~` (the pods
/// still run the old projection).
pub fn merge_pending(previous: &str, delta: &BindingDelta) -> String {
    let mut tokens: Vec<(char, String)> = previous
        .split_whitespace()
        .filter_map(|t| {
            let mut chars = t.chars();
            let sign = chars.next().filter(|c| matches!(c, '+' | '-' | '~'))?;
            Some((sign, chars.as_str().to_string())).filter(|(_, n)| !n.is_empty())
        })
        .collect();
    let position =
        |tokens: &[(char, String)], name: &str| tokens.iter().position(|(_, n)| n == name);
    for name in &delta.added {
        match position(&tokens, name) {
            Some(i) if tokens[i].0 == '-' => tokens[i].0 = '~',
            Some(_) => {}
            None => tokens.push(('+', name.clone())),
        }
    }
    for name in &delta.removed {
        match position(&tokens, name) {
            Some(i) if tokens[i].0 == '+' => {
                tokens.remove(i);
            }
            Some(i) => tokens[i].0 = '-',
            None => tokens.push(('-', name.clone())),
        }
    }
    for name in &delta.changed {
        if position(&tokens, name).is_none() {
            tokens.push(('~', name.clone()));
        }
    }
    tokens
        .iter()
        .map(|(sign, name)| format!("{sign}{name}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The map at `path`. The last map is created when absent or null (a StatefulSet without
/// labels); `metadata` and `spec` themselves must be there, or the object is not readable.
fn map_at<'a>(
    object: &'a mut Value,
    path: &[&str],
) -> Result<&'a mut Map<String, Value>, Unwritable> {
    let mut here = object;
    for (depth, key) in path.iter().enumerate() {
        let Value::Object(map) = here else {
            return Err(unwritable(&path[..depth]));
        };
        let last = depth + 1 == path.len() && depth > 0;
        if !last && !map.contains_key(*key) {
            return Err(Unwritable(format!(
                "{} is missing",
                path[..=depth].join(".")
            )));
        }
        let next = map.entry(*key).or_insert(Value::Null);
        if next.is_null() && last {
            *next = Value::Object(Map::new());
        }
        here = next;
    }
    match here {
        Value::Object(map) => Ok(map),
        _ => Err(unwritable(path)),
    }
}

/// `metadata.<key>` when it exists; nothing to remove from a map that is not there.
fn existing_map<'a>(
    object: &'a mut Value,
    key: &str,
) -> Result<Option<&'a mut Map<String, Value>>, Unwritable> {
    match object.get_mut("metadata").and_then(|m| m.get_mut(key)) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(unwritable(&["metadata", key])),
    }
}

fn unwritable(path: &[&str]) -> Unwritable {
    let at = if path.is_empty() {
        "the object".to_string()
    } else {
        path.join(".")
    };
    Unwritable(format!("{at} is not a JSON object"))
}

fn set(map: &mut Map<String, Value>, key: &str, value: Value) -> bool {
    if map.get(key) == Some(&value) {
        return false;
    }
    map.insert(key.to_string(), value);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hold() -> Hold {
        Hold {
            original_strategy: r#"{"rollingUpdate":{"partition":0},"type":"RollingUpdate"}"#.into(),
            held_since: "2026-12-02T16:51:06Z".into(),
            pending: "+orders-db".into(),
        }
    }

    #[test]
    fn apply_sets_on_delete_and_every_marker() {
        let mut sts = json!({"metadata": {"name": "app"}, "spec": {"replicas": 3,
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}}});
        assert_eq!(apply(&mut sts, &hold()), Ok(true));
        assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
        assert!(is_held(&sts));
        let m = markers(&sts);
        assert_eq!(m.original_strategy, Some(hold().original_strategy.as_str()));
        assert_eq!(m.held_since, Some("2026-12-02T16:51:06Z"));
        assert_eq!(m.pending, Some("+orders-db"));
        assert_eq!(
            apply(&mut sts, &hold()),
            Ok(false),
            "applying twice changes nothing"
        );
    }

    #[test]
    fn release_restores_the_strategy_and_removes_every_marker() {
        let mut sts = json!({"metadata": {"labels": {"app": "x"}, "annotations": {"keep": "me"}},
            "spec": {}});
        apply(&mut sts, &hold()).expect("writable");
        let strategy = default_strategy();
        assert_eq!(release(&mut sts, strategy.clone()), Ok(true));
        assert_eq!(
            sts,
            json!({"metadata": {"labels": {"app": "x"}, "annotations": {"keep": "me"}},
                "spec": {"updateStrategy": strategy}})
        );
        assert_eq!(release(&mut sts, default_strategy()), Ok(false));
    }

    #[test]
    fn garbage_metadata_is_unwritable_not_a_panic() {
        let mut sts = json!({"metadata": {"labels": "oops"}, "spec": {}});
        assert_eq!(
            apply(&mut sts, &hold()),
            Err(Unwritable("metadata.labels is not a JSON object".into()))
        );
        let mut sts = json!({"metadata": 3, "spec": {}});
        assert!(
            release(&mut sts, default_strategy()).is_ok(),
            "no marker to remove"
        );
        let mut sts = json!({"metadata": null, "spec": {}});
        assert_eq!(
            apply(&mut sts, &hold()),
            Err(Unwritable("metadata is not a JSON object".into()))
        );
        let mut sts = json!({"spec": {}});
        assert_eq!(
            apply(&mut sts, &hold()),
            Err(Unwritable("metadata is missing".into()))
        );
        assert!(apply(&mut json!([]), &hold()).is_err());
    }

    #[test]
    fn rollout_in_progress_reads_status_of_a_rolling_update() {
        let base = json!({"metadata": {"generation": 4}, "spec": {"replicas": 3,
            "updateStrategy": {"type": "RollingUpdate"}},
            "status": {"observedGeneration": 4, "currentRevision": "r1", "updateRevision": "r1",
                "updatedReplicas": 3, "replicas": 3}});
        assert!(!rollout_in_progress(&base));
        let edits = [
            ("/status/observedGeneration", json!(3)),
            ("/status/updateRevision", json!("r2")),
            ("/status/updatedReplicas", json!(1)),
        ];
        for (path, value) in edits {
            let mut sts = base.clone();
            *sts.pointer_mut(path).expect("field") = value;
            assert!(rollout_in_progress(&sts), "{path}");
            sts["spec"]["updateStrategy"] = on_delete();
            assert!(!rollout_in_progress(&sts), "OnDelete never rolls: {path}");
        }
        let mut no_status = base.clone();
        no_status.as_object_mut().expect("object").remove("status");
        assert!(!rollout_in_progress(&no_status));
    }

    #[test]
    fn pending_folds_changes_by_binding_name() {
        let delta = |added: &[&str], removed: &[&str], changed: &[&str]| BindingDelta {
            added: added.iter().map(|s| s.to_string()).collect(),
            removed: removed.iter().map(|s| s.to_string()).collect(),
            changed: changed.iter().map(|s| s.to_string()).collect(),
        };
        let cases = [
            ("", delta(&["orders-db"], &[], &[]), "+orders-db"),
            (
                "+orders-db",
                delta(&["cache"], &[], &[]),
                "+orders-db +cache",
            ),
            ("+orders-db", delta(&[], &["orders-db"], &[]), ""),
            ("-orders-db", delta(&["orders-db"], &[], &[]), "~orders-db"),
            ("~orders-db", delta(&[], &["orders-db"], &[]), "-orders-db"),
            ("+orders-db", delta(&[], &[], &["orders-db"]), "+orders-db"),
            ("", delta(&["b"], &["a"], &["c"]), "+b -a ~c"),
            ("garbage +x", delta(&[], &[], &[]), "+x"),
        ];
        for (previous, delta, want) in cases {
            assert_eq!(
                merge_pending(previous, &delta),
                want,
                "{previous} {delta:?}"
            );
        }
    }
}
