//! The decision table, as a pure function of the request, the settings and the time.
//! `response.rs` turns its result into an admission response.

use serde_json::Value;

use crate::clock::UtcTime;
use crate::markers::{self, Hold, ReleaseRequest, MARKER_PREFIX};
use crate::pending;
use crate::raw::{ReadPlan, Tree};
use crate::settings::{Mode, Settings};
use crate::template::artefacts;
use crate::template::classify::{Change, ChangeKind};
use crate::template::insertion::compare;
use crate::view::{at, text_at};
use crate::window::Window;
use crate::workload::{self, Json, Workload};

/// The parts of an admission request the decision reads: the objects as far as
/// [`read_plan`] reads them, and their pod templates as far as binding recognition looks.
#[derive(Debug, Clone, Copy)]
pub struct Admission<'a, T> {
    pub operation: &'a str,
    pub group: &'a str,
    pub kind: &'a str,
    pub sub_resource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: &'a Value,
    pub old_object: &'a Value,
    /// The pod templates, at the kind's template path.
    pub template: Option<&'a T>,
    pub old_template: Option<&'a T>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Accept unchanged, nothing to say.
    Accept,
    /// Accept unchanged, with a warning: the request could not be read. Failing open keeps
    /// today's behaviour (the app restarts); failing closed would block every write in scope.
    Unreadable(String),
    /// Leave admission held: the kind's held control and these markers.
    Hold {
        workload: &'static dyn Workload,
        hold: Hold,
        first: bool,
        /// The request asked for a release in a maintenance window and none is open: the
        /// request is dropped and the response says why.
        no_window: bool,
    },
    /// Drop the markers and restore `restore` (or leave the control as the request sets it);
    /// the held changes roll in this one rollout.
    Release {
        workload: &'static dyn Workload,
        restore: Option<Value>,
        released: String,
        because: String,
        /// The remembered control, when the API server would refuse it (the default is
        /// restored instead).
        invalid_remembered: Option<String>,
    },
    /// Accept unchanged, with a warning: this binding change must not wait.
    RollNow {
        workload: &'static dyn Workload,
        why: String,
    },
    /// A release was asked of a workload that is not held: drop the request, nothing else.
    NotHeld { workload: &'static dyn Workload },
    /// `mode: reject`: refuse the binding-only change.
    Reject { message: String, bindings: String },
}

/// Korifi's label naming the Cloud Foundry app, shown in a refusal.
pub const APP_GUID_LABEL: &str = "korifi.cloudfoundry.org/app-guid";

const NAME: &[&str] = &["metadata", "name"];
const NAMESPACE: &[&str] = &["metadata", "namespace"];
const DELETION: &[&str] = &["metadata", "deletionTimestamp"];
const LABELS: &[&str] = &["metadata", "labels"];
const ANNOTATIONS: &[&str] = &["metadata", "annotations"];

/// What the decision reads of the objects: the names a refusal shows, deletion, the policy's
/// own label and annotations (of the workload's others, only the app a refusal names), and
/// what each kind declares: its control, its fields, its pod template and its `status`.
pub fn read_plan() -> ReadPlan {
    // A remembered annotation outside the markers' prefix is read too.
    let annotations = std::iter::once(MARKER_PREFIX).chain(
        workload::kinds()
            .map(|w| w.declared().remembered)
            .filter(|key| !key.starts_with(MARKER_PREFIX)),
    );
    let mut plan = ReadPlan {
        values: vec![NAME, NAMESPACE, DELETION],
        maps: vec![
            (LABELS, vec![MARKER_PREFIX, APP_GUID_LABEL]),
            (ANNOTATIONS, annotations.collect()),
        ],
        ..ReadPlan::default()
    };
    // A path named twice is read once (the reader lays the plan out by level).
    for kind in workload::kinds().map(|w| w.declared()) {
        let fields = [kind.control].into_iter().chain(kind.reads.iter().copied());
        plan.values.extend(fields.map(|f| f.path));
        plan.templates
            .push((kind.template, &artefacts::TEMPLATE_SHAPE));
        for field in kind.status {
            let members = match field.json {
                Json::ListOf(members) => members,
                _ => &[],
            };
            if let [member] = field.path {
                plan.status.push((member, members));
            }
        }
    }
    plan
}

pub fn decide<T: Tree>(request: &Admission<T>, settings: &Settings, now: UtcTime) -> Decision {
    decide_with(request, settings, now, |old, new| {
        compare(old, new, &settings.artefacts)
    })
}

/// `decide`, with the two templates compared by `compare` (the reference implementation's
/// comparison, in the differential tests).
pub(crate) fn decide_with<'a, T: Tree>(
    request: &Admission<'a, T>,
    settings: &Settings,
    now: UtcTime,
    compare: impl FnOnce(&T, &T) -> Change,
) -> Decision {
    let in_scope = request.operation == "UPDATE" && request.sub_resource.is_empty();
    let Some(workload) = workload::of(request.group, request.kind).filter(|_| in_scope) else {
        return Decision::Accept;
    };
    let (object, old) = (request.object, request.old_object);
    if !object.is_object() || !old.is_object() {
        return Decision::Unreadable("the request has no object or oldObject".into());
    }
    if being_deleted(object) || being_deleted(old) {
        return Decision::Accept;
    }
    let template = |t: Option<&'a T>| t.filter(|t| t.is_object());
    let (Some(old_template), Some(new_template)) =
        (template(request.old_template), template(request.template))
    else {
        return Decision::Unreadable("spec.template is missing or not an object".into());
    };

    let mut change = compare(old_template, new_template);
    let held = markers::is_held(old);
    // A held workload whose request dropped the markers was overwritten by a controller: the
    // projector restores the live bindings in the same request, so nothing was unbound.
    if change.emptied && held && !markers::is_held(object) {
        change.kind = ChangeKind::Wipe;
    }
    let window = settings
        .maintenance_windows
        .iter()
        .find(|w| w.contains(now));
    let binding_only = change.kind == ChangeKind::BindingOnly;
    let roll_now = binding_only
        .then(|| workload.must_roll_now(&change))
        .flatten();
    // The owner resumed a workload the policy does not hold (`kubectl rollout resume`): the
    // binding change rolls with the owner's rollout.
    let owner_resumes = !held
        && workload.resume_releases()
        && workload.stops_rollouts(workload.control(old))
        && requests_rolling_control(request, workload);
    // A change the controller would roll out now, pod by pod.
    let would_restart = binding_only
        && !owner_resumes
        && !workload.stops_rollouts(workload.control(object))
        && !workload.rollout_in_progress(old);
    let release = |because: String| release(request, workload, because);

    match settings.mode {
        // A refused unbind would keep a template that mounts a secret being deleted, and the
        // projector's unprojection would wait on it: only additions can be refused.
        Mode::Reject if would_restart && window.is_none() => match change.removal() {
            Some(what) => Decision::RollNow {
                workload,
                why: format!("{what}; not refused, new pods would mount a deleted secret"),
            },
            None => reject(request, workload, &change, &settings.maintenance_windows),
        },
        Mode::Reject => Decision::Accept,
        Mode::Defer if held => {
            let requested = markers::release_request(object);
            if requested == Some(ReleaseRequest::Now) {
                release("release requested".into())
            } else if let Some(window) = window {
                let asked = match requested {
                    Some(ReleaseRequest::InWindow) => "release requested in ",
                    _ => "",
                };
                release(format!("{asked}maintenance window {window}"))
            } else if change.kind == ChangeKind::Restage {
                release("restart or restage".into())
            } else if let Some(why) = roll_now {
                release(why)
            } else if workload.resume_releases() && requests_rolling_control(request, workload) {
                release("rollout resumed".into())
            } else {
                let no_window = requested == Some(ReleaseRequest::InWindow);
                keep_hold(request, workload, &change, now, no_window)
            }
        }
        Mode::Defer if markers::release_request(object).is_some() => Decision::NotHeld { workload },
        Mode::Defer if would_restart && window.is_none() => match roll_now {
            Some(why) => Decision::RollNow { workload, why },
            None => Decision::Hold {
                workload,
                hold: Hold {
                    remembered_key: workload.remembered_annotation(),
                    remembered: control_or_default(workload, object).to_string(),
                    held_since: now.rfc3339(),
                    pending: pending::merge("", &change.delta),
                },
                first: true,
                no_window: false,
            },
        },
        Mode::Defer => Decision::Accept,
    }
}

/// Re-applied markers come from the old object unchanged, so a controller's repeated writes
/// store the same object and do not wake it again. `pending` changes only with a binding
/// change that is not a wipe.
fn keep_hold<T>(
    request: &Admission<T>,
    workload: &'static dyn Workload,
    change: &Change,
    now: UtcTime,
    no_window: bool,
) -> Decision {
    let held = markers::read(request.old_object, workload.remembered_annotation());
    let remembered = if requests_rolling_control(request, workload) {
        control_or_default(workload, request.object).to_string()
    } else if let Some(remembered) = held.remembered {
        remembered.to_string()
    } else {
        // Labelled by hand: remember what it has now, never a default over an operator's own.
        current_rolling_control(request, workload)
            .cloned()
            .unwrap_or_else(|| workload.default_control())
            .to_string()
    };
    let previous = held.pending.unwrap_or_default();
    let pending = if change.kind == ChangeKind::BindingOnly {
        pending::merge(previous, &change.delta)
    } else {
        previous.to_string()
    };
    Decision::Hold {
        workload,
        hold: Hold {
            remembered_key: workload.remembered_annotation(),
            remembered,
            held_since: held
                .held_since
                .map_or_else(|| now.rfc3339(), str::to_string),
            pending,
        },
        first: false,
        no_window,
    }
}

/// What a release writes back: nothing when the request sets a rolling control itself (it is
/// the one to keep); else the remembered control when the API server accepts it; else the
/// control the workload has, unless that is the hold's; else the API default.
fn release<T>(
    request: &Admission<T>,
    workload: &'static dyn Workload,
    because: String,
) -> Decision {
    let held = markers::read(request.old_object, workload.remembered_annotation());
    let released = held.pending.unwrap_or_default().to_string();
    let remembered = held.remembered.map(|text| {
        serde_json::from_str::<Value>(text)
            .ok()
            .filter(|v| workload.accepts(v))
            .ok_or(text)
    });
    let (restore, invalid_remembered) = match remembered {
        _ if requests_rolling_control(request, workload) => (None, None),
        Some(Ok(remembered)) => (Some(remembered), None),
        Some(Err(text)) => (Some(workload.default_control()), Some(text.to_string())),
        None => match current_rolling_control(request, workload) {
            Some(_) => (None, None),
            None => (Some(workload.default_control()), None),
        },
    };
    Decision::Release {
        workload,
        restore,
        released,
        because,
        invalid_remembered,
    }
}

/// Whether the request sets a control that lets pods roll, other than the old object's (Korifi's
/// runner resets the strategy on every write; `kubectl rollout resume` unpauses).
fn requests_rolling_control<T>(request: &Admission<T>, workload: &dyn Workload) -> bool {
    let requested = workload.control(request.object);
    requested != workload.control(request.old_object) && !workload.stops_rollouts(requested)
}

/// The control the request or the old object has, when it lets pods roll.
fn current_rolling_control<'a, T>(
    request: &Admission<'a, T>,
    workload: &dyn Workload,
) -> Option<&'a Value> {
    [request.object, request.old_object]
        .into_iter()
        .filter_map(|o| workload.control(o))
        .find(|c| !workload.stops_rollouts(Some(c)))
}

fn control_or_default(workload: &dyn Workload, object: &Value) -> Value {
    workload
        .control(object)
        .cloned()
        .unwrap_or_else(|| workload.default_control())
}

fn being_deleted(object: &Value) -> bool {
    at(object, DELETION).is_some_and(|t| !t.is_null())
}

/// Names the workload, the bindings and every way to apply the change now.
fn reject<T>(
    request: &Admission<T>,
    workload: &dyn Workload,
    change: &Change,
    windows: &[Window],
) -> Decision {
    let meta = |key: &str, fallback: &'static str| {
        text_at(request.object, &["metadata", key]).unwrap_or(fallback)
    };
    let namespace = meta("namespace", "");
    let namespace = if namespace.is_empty() {
        request.namespace
    } else {
        namespace
    };
    let name = meta("name", "");
    let name = if name.is_empty() { request.name } else { name };
    let app = text_at(request.object, &["metadata", "labels", APP_GUID_LABEL])
        .map(|guid| format!(" (Cloud Foundry app guid {guid})"))
        .unwrap_or_default();
    let bindings = pending::merge("", &change.delta);
    let shown = if bindings.is_empty() {
        "a projection change"
    } else {
        bindings.as_str()
    };
    let windows = if windows.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = windows.iter().map(Window::to_string).collect();
        format!(", or wait for a maintenance window ({})", list.join("; "))
    };
    let kind = workload.kind();
    let message = format!(
        "restage-gate refused an update of {kind} {namespace}/{name}{app}: its only pod-template \
         change is service binding {shown}, which would restart every pod (mode: reject). To apply \
         it now, restart or restage the app (cf restart / cf restage), or run \
         `kubectl rollout restart {}/{name} -n {namespace}`{windows}.",
        kind.to_lowercase()
    );
    Decision::Reject { message, bindings }
}
