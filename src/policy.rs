//! The decision table of DESIGN.md §3, as a pure function of the request, the settings and
//! the time. `validate` turns its result into an admission response.

use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::Resource;
use serde_json::Value;

use crate::artefacts::at;
use crate::classify::{classify, ChangeKind};
use crate::clock::UtcTime;
use crate::hold::{
    default_strategy, is_held, is_on_delete, markers, merge_pending, rollout_in_progress,
    update_strategy, Hold,
};
use crate::settings::{Mode, Settings};
use crate::window::Window;

/// The parts of an admission request the decision reads.
#[derive(Debug, Clone, Copy)]
pub struct Admission<'a> {
    pub operation: &'a str,
    pub group: &'a str,
    pub kind: &'a str,
    pub sub_resource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: &'a Value,
    pub old_object: &'a Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Accept unchanged, nothing to say.
    Accept,
    /// Accept unchanged, with a warning: the request could not be read. Failing open keeps
    /// today's behaviour (the app restarts); failing closed would block every write in scope.
    Unreadable(String),
    /// Leave admission held: OnDelete and these markers.
    Hold { hold: Hold, first: bool },
    /// Restore `strategy` and drop the markers; the held changes roll in this one rollout.
    Release {
        strategy: Value,
        released: String,
        because: String,
    },
    /// `mode: reject`: refuse the binding-only change.
    Reject { message: String, bindings: String },
}

pub fn decide(request: &Admission, settings: &Settings, now: UtcTime) -> Decision {
    let in_scope = request.operation == "UPDATE"
        && request.group == StatefulSet::GROUP
        && request.kind == StatefulSet::KIND
        && request.sub_resource.is_empty();
    if !in_scope {
        return Decision::Accept;
    }
    let (object, old) = (request.object, request.old_object);
    if !object.is_object() || !old.is_object() {
        return Decision::Unreadable("the request has no object or oldObject".into());
    }
    if being_deleted(object) || being_deleted(old) {
        return Decision::Accept;
    }
    let templates = (
        at(old, &["spec", "template"]).filter(|t| t.is_object()),
        at(object, &["spec", "template"]).filter(|t| t.is_object()),
    );
    let (Some(old_template), Some(new_template)) = templates else {
        return Decision::Unreadable("spec.template is missing or not an object".into());
    };

    let change = classify(old_template, new_template, &settings.artefacts);
    let window = settings
        .maintenance_windows
        .iter()
        .find(|w| w.contains(now));
    // A change the StatefulSet controller would roll out now, pod by pod.
    let would_restart = change.kind == ChangeKind::BindingOnly
        && !is_on_delete(update_strategy(object))
        && !rollout_in_progress(old);

    match settings.mode {
        Mode::Reject if would_restart && window.is_none() => {
            let bindings = merge_pending("", &change.delta);
            Decision::Reject {
                message: rejection(request, &bindings, &settings.maintenance_windows),
                bindings,
            }
        }
        Mode::Reject => Decision::Accept,
        Mode::Defer if is_held(old) => {
            if let Some(window) = window {
                release(request, format!("maintenance window {window}"))
            } else if change.kind == ChangeKind::Restage {
                release(request, "restart or restage".into())
            } else {
                keep_hold(request, change.kind, &change.delta, now)
            }
        }
        Mode::Defer if would_restart && window.is_none() => Decision::Hold {
            hold: Hold {
                original_strategy: update_strategy(object)
                    .cloned()
                    .unwrap_or_else(default_strategy)
                    .to_string(),
                held_since: now.rfc3339(),
                pending: merge_pending("", &change.delta),
            },
            first: true,
        },
        Mode::Defer => Decision::Accept,
    }
}

/// Re-applied markers come from the old object unchanged, so a controller's repeated writes
/// store the same object and do not wake it again.
fn keep_hold(
    request: &Admission,
    kind: ChangeKind,
    delta: &crate::classify::BindingDelta,
    now: UtcTime,
) -> Decision {
    let held = markers(request.old_object);
    let original_strategy = match requested_strategy(request) {
        Some(strategy) => strategy.to_string(),
        None => held
            .original_strategy
            .map_or_else(|| default_strategy().to_string(), str::to_string),
    };
    let previous = held.pending.unwrap_or_default();
    let pending = if kind == ChangeKind::BindingOnly {
        merge_pending(previous, delta)
    } else {
        previous.to_string()
    };
    Decision::Hold {
        hold: Hold {
            original_strategy,
            held_since: held
                .held_since
                .map_or_else(|| now.rfc3339(), str::to_string),
            pending,
        },
        first: false,
    }
}

fn release(request: &Admission, because: String) -> Decision {
    let held = markers(request.old_object);
    let strategy = requested_strategy(request).cloned().unwrap_or_else(|| {
        held.original_strategy
            .and_then(|s| serde_json::from_str::<Value>(s).ok())
            .filter(Value::is_object)
            .unwrap_or_else(default_strategy)
    });
    Decision::Release {
        strategy,
        released: held.pending.unwrap_or_default().to_string(),
        because,
    }
}

/// The strategy a request sets while the workload is held, when it sets a new one: that is
/// the strategy to restore (Korifi's runner resets it to the default on every write).
fn requested_strategy<'a>(request: &Admission<'a>) -> Option<&'a Value> {
    update_strategy(request.object)
        .filter(|s| Some(*s) != update_strategy(request.old_object) && !is_on_delete(Some(s)))
}

fn being_deleted(object: &Value) -> bool {
    at(object, &["metadata", "deletionTimestamp"]).is_some_and(|t| !t.is_null())
}

/// Names the workload, the bindings and every way to apply the change now.
fn rejection(request: &Admission, bindings: &str, windows: &[Window]) -> String {
    let meta = |key: &str, fallback: &str| {
        at(request.object, &["metadata", key])
            .and_then(Value::as_str)
            .unwrap_or(fallback)
            .to_string()
    };
    let (namespace, name) = (
        meta("namespace", request.namespace),
        meta("name", request.name),
    );
    let app = at(
        request.object,
        &["metadata", "labels", "korifi.cloudfoundry.org/app-guid"],
    )
    .and_then(Value::as_str)
    .map(|guid| format!(" (Cloud Foundry app guid {guid})"))
    .unwrap_or_default();
    let bindings = if bindings.is_empty() {
        "a projection change"
    } else {
        bindings
    };
    let windows = if windows.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = windows.iter().map(Window::to_string).collect();
        format!(", or wait for a maintenance window ({})", list.join("; "))
    };
    format!(
        "restage-gate refused an update of StatefulSet {namespace}/{name}{app}: its only pod-template \
         change is service binding {bindings}, which would restart every pod (mode: reject). To apply \
         it now, restart or restage the app (cf restart / cf restage), or run \
         `kubectl rollout restart statefulset/{name} -n {namespace}`{windows}."
    )
}
