//! The decision table, as a pure function of the request (as `admission.rs` reads it), the
//! settings and the time. `response.rs` turns its result into an admission response.

use serde_json::Value;

use crate::admission::{Admission, APP_GUID_LABEL, DELETION, UID};
use crate::clock::UtcTime;
use crate::markers::{self, Hold, ReleaseRequest};
use crate::pending;
use crate::settings::{Mode, Settings};
use crate::template::classify::{Change, ChangeKind};
use crate::template::compare::compare;
use crate::view::{at, text_at};
use crate::window::{Opening, Window};
use crate::workload::{self, Workload};
use raw::Tree;

/// How a request is answered: every row of the table ends in one of these.
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
        /// The request asked for a release in a maintenance window and none is open for the
        /// workload: the request is dropped and the response says why.
        no_window: bool,
        /// A window is open, but the workload's slot in it opens only at this time.
        slot: Option<UtcTime>,
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

/// The decision on a request at `now`.
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
    match workload::of(request.group, request.kind).filter(|_| in_scope) {
        Some(workload) => decide_for(request, workload, settings, now, compare),
        None => Decision::Accept,
    }
}

/// The decision on an update of a workload of a kind the policy holds.
fn decide_for<'a, T: Tree>(
    request: &Admission<'a, T>,
    workload: &'static dyn Workload,
    settings: &Settings,
    now: UtcTime,
    compare: impl FnOnce(&T, &T) -> Change,
) -> Decision {
    let (object, old) = (request.object, request.old_object);
    if !object.is_object() || !old.is_object() {
        return Decision::Unreadable("the request has no object or oldObject".into());
    }
    if being_deleted(object) || being_deleted(old) {
        return Decision::Accept;
    }
    if !workload.holds(old, object) {
        // A held object its kind no longer holds (a canary switched to blue-green) is released:
        // nothing else would ever restore its control. Reject mode never mutates.
        let release_it = settings.mode == Mode::Defer && markers::is_held(old);
        return match release_it {
            true => release(request, workload, "no longer held by its kind".into()),
            false => Decision::Accept,
        };
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
    let uid = text_at(old, UID).or_else(|| text_at(object, UID));
    let (window, slot) = open_window(&settings.maintenance_windows, now, uid);
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
            None => reject(
                request,
                workload,
                &change,
                &settings.maintenance_windows,
                slot,
            ),
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
                keep_hold(request, workload, &change, now, no_window, slot)
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
                slot,
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
    slot: Option<UtcTime>,
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
        slot,
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

/// Names the workload, the bindings and every way to apply the change now.
fn reject<T>(
    request: &Admission<T>,
    workload: &dyn Workload,
    change: &Change,
    windows: &[Window],
    slot: Option<UtcTime>,
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
        let slot = slot.map_or_else(String::new, |at| {
            format!(
                "; this workload's slot in the open one starts at {}",
                at.rfc3339()
            )
        });
        format!(
            ", or wait for a maintenance window ({}{slot})",
            list.join("; ")
        )
    };
    let kind = workload.kind();
    let restart = workload.restart_command(namespace, name);
    let message = format!(
        "restage-gate refused an update of {kind} {namespace}/{name}{app}: its only pod-template \
         change is service binding {shown}, which would restart every pod (mode: reject). To apply \
         it now, restart or restage the app (cf restart / cf restage), or run `{restart}`{windows}."
    );
    Decision::Reject { message, bindings }
}

/// The first window open at `now` for the object with `uid`; when none is but one is open with
/// the object's slot still to come, the earliest such slot.
fn open_window<'w>(
    windows: &'w [Window],
    now: UtcTime,
    uid: Option<&str>,
) -> (Option<&'w Window>, Option<UtcTime>) {
    let mut slot: Option<UtcTime> = None;
    for window in windows {
        match window.opening(now, uid) {
            Opening::Open => return (Some(window), None),
            Opening::Later(at) => slot = Some(slot.map_or(at, |s| s.min(at))),
            Opening::Closed => {}
        }
    }
    (None, slot)
}

fn being_deleted(object: &Value) -> bool {
    at(object, DELETION).is_some_and(|t| !t.is_null())
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::admission::tests::{BLUE_GREEN, EXAMPLE, WORKLOAD_REF};
    use crate::template::classify::BindingDelta;
    use crate::workload::{kubectl_rollout, Kind};

    /// [`EXAMPLE`]'s kind: it declines an object with a blue-green strategy or a `workloadRef`
    /// (no pod template of its own).
    struct Example;

    impl Workload for Example {
        fn declared(&self) -> &'static Kind {
            &EXAMPLE
        }
        fn holds(&self, _old: &Value, new: &Value) -> bool {
            BLUE_GREEN.of(new).is_none() && WORKLOAD_REF.of(new).is_none()
        }
        fn rolling_out(&self, _old: &Value, _status: &Value) -> bool {
            false
        }
        fn restart_command(&self, namespace: &str, name: &str) -> String {
            format!("example restart {namespace}/{name}")
        }
    }

    fn decide_example(old: &Value, new: &Value, mode: Mode) -> Decision {
        let template = |o: &Value| at(o, EXAMPLE.template).cloned();
        let (old_template, new_template) = (template(old), template(new));
        let request = Admission {
            operation: "UPDATE",
            group: EXAMPLE.group,
            kind: EXAMPLE.kind,
            sub_resource: "",
            namespace: "shop",
            name: "orders",
            object: new,
            old_object: old,
            template: new_template.as_ref(),
            old_template: old_template.as_ref(),
        };
        let settings = Settings {
            mode,
            ..Settings::default()
        };
        let bind = |_: &Value, _: &Value| Change {
            kind: ChangeKind::BindingOnly,
            delta: BindingDelta {
                added: vec!["orders-db".into()],
                ..BindingDelta::default()
            },
            emptied: false,
            dropped_secrets: Vec::new(),
        };
        decide_for(&request, &Example, &settings, UtcTime(0), bind)
    }

    fn example(spec: Value) -> Value {
        json!({"metadata": {"name": "orders", "namespace": "shop"}, "spec": spec})
    }

    #[test]
    fn a_kind_that_declines_an_object_has_it_accepted_unchanged_before_its_template_is_read() {
        let template = json!({"spec": {"containers": [{"name": "app"}]}});
        let canary = example(json!({"template": template, "strategy": {"canary": {}}}));
        let held = decide_example(&canary, &canary, Mode::Defer);
        assert!(
            matches!(held, Decision::Hold { first: true, .. }),
            "{held:?}"
        );
        let blue_green = example(json!({"template": template, "strategy": {"blueGreen": {}}}));
        assert_eq!(
            decide_example(&blue_green, &blue_green, Mode::Defer),
            Decision::Accept
        );
        assert_eq!(
            decide_example(&blue_green, &blue_green, Mode::Reject),
            Decision::Accept
        );
        // Without a pod template of its own: declined, not unreadable.
        let referenced = example(json!({"workloadRef": {"name": "orders"}}));
        assert_eq!(
            decide_example(&referenced, &referenced, Mode::Defer),
            Decision::Accept
        );
        let no_template = example(json!({"strategy": {"canary": {}}}));
        assert!(matches!(
            decide_example(&no_template, &no_template, Mode::Defer),
            Decision::Unreadable(_)
        ));
    }

    #[test]
    fn a_held_object_its_kind_no_longer_holds_is_released_in_defer_mode_only() {
        let template = json!({"spec": {"containers": [{"name": "app"}]}});
        let mut held = example(json!({"template": template, "strategy": {"canary": {}},
            "paused": true}));
        held["metadata"]["labels"] = json!({markers::HELD_LABEL: "true"});
        held["metadata"]["annotations"] =
            json!({EXAMPLE.remembered: "false", markers::PENDING_ANNOTATION: "+orders-db"});
        let mut blue_green = held.clone();
        blue_green["spec"]["strategy"] = json!({"blueGreen": {}});
        match decide_example(&held, &blue_green, Mode::Defer) {
            Decision::Release {
                restore, because, ..
            } => {
                assert_eq!(restore, Some(json!(false)));
                assert_eq!(because, "no longer held by its kind");
            }
            other => panic!("released: {other:?}"),
        }
        assert_eq!(
            decide_example(&held, &blue_green, Mode::Reject),
            Decision::Accept
        );
        // Not held: declined and accepted as it is.
        let mut plain = blue_green.clone();
        plain["metadata"] = json!({"name": "orders", "namespace": "shop"});
        assert_eq!(
            decide_example(&plain, &plain, Mode::Defer),
            Decision::Accept
        );
    }

    #[test]
    fn a_refusal_gives_the_kinds_own_restart_command() {
        let canary = example(json!({"template": {"spec": {}}}));
        let Decision::Reject { message, .. } = decide_example(&canary, &canary, Mode::Reject)
        else {
            panic!("refused");
        };
        assert!(
            message.contains("or run `example restart shop/orders`."),
            "{message}"
        );
        assert!(!message.contains("kubectl"), "{message}");
    }

    #[test]
    fn a_rollout_command_names_the_declared_kind() {
        let declared = workload::DaemonSet.declared();
        assert_eq!(
            kubectl_rollout("restart", declared, "observability", "log-shipper"),
            "kubectl rollout restart daemonset/log-shipper -n observability"
        );
    }
}
