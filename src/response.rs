//! A decision as an admission response: the edits to the request's own object, warnings for
//! the client and audit annotations for the log.

use serde_json::Value;

use crate::decision::Decision;
use crate::markers;
use crate::view::Unwritable;
use crate::workload;
use raw::Answer;

/// Why `restage-gate.io/release: window` was dropped without a release, and what to do.
pub const NO_WINDOW: &str = "restage-gate.io/release=window dropped: no maintenance window is \
     open (settings.maintenanceWindows), so the hold stays until one opens; set \
     restage-gate.io/release=now to release now";

/// Why `restage-gate.io/release: window` was dropped inside a window whose slot for the
/// workload has not come; the slot's time follows.
pub const BEFORE_SLOT: &str = "restage-gate.io/release=window dropped: a maintenance window is \
     open, but it spreads its releases (settings.maintenanceWindows[].spreadMinutes) and this \
     workload's slot opens only at ";

/// What to do about a hold until its slot, after the slot's time.
const AFTER_SLOT: &str = "; the window job's first tick from then on releases it; set \
     restage-gate.io/release=now to release now";

/// Admission warnings should stay under this many characters (kubectl shows them whole).
pub const WARNING_LIMIT: usize = 120;

/// What a decision changes in the object: the tree-based edit, made on the members the policy
/// read (or, in tests, on a whole tree). Returns whether anything changed.
pub fn edit(decision: &Decision, object: &mut Value) -> Result<bool, Unwritable> {
    match decision {
        Decision::Hold { workload, hold, .. } => workload::hold(object, *workload, hold),
        Decision::Release {
            workload, restore, ..
        } => workload::release(object, *workload, restore.clone()),
        Decision::NotHeld { .. } => markers::remove_release_request(object),
        _ => Ok(false),
    }
}

/// Turns a decision into a response, editing the values read of the request's object. Returns
/// whether the object changed: the answer then carries it.
pub fn respond(
    decision: Decision,
    object: &mut Value,
    namespace: &str,
    name: &str,
) -> (Answer, bool) {
    let changed = match edit(&decision, object) {
        Err(Unwritable(why)) => return (unreadable(&why), false),
        Ok(changed) => changed,
    };
    let answer = match decision {
        Decision::Accept => response(true, None, None),
        Decision::Unreadable(why) => unreadable(&why),
        Decision::Hold {
            workload,
            hold,
            first,
            no_window,
            slot,
        } => {
            let kind = workload.kind();
            let slot = slot.map(|at| at.rfc3339());
            let warning = if let Some(at) = &slot {
                let held = if first {
                    " rollout held"
                } else {
                    " stays held"
                };
                [
                    "restage-gate: ",
                    kind,
                    held,
                    " until its maintenance-window slot at ",
                    at,
                    "; pending: ",
                    &hold.pending,
                ]
                .concat()
            } else if no_window {
                let since = &hold.held_since;
                [
                    "restage-gate: ",
                    kind,
                    " stays held: no maintenance window open; held since ",
                    since,
                ]
                .concat()
            } else if first {
                let applies = " applies at the next restart or restage";
                [
                    "restage-gate: ",
                    kind,
                    " rollout held; ",
                    &hold.pending,
                    applies,
                ]
                .concat()
            } else {
                let since = &hold.held_since;
                [
                    "restage-gate: ",
                    kind,
                    " rollout held since ",
                    since,
                    "; pending: ",
                    &hold.pending,
                ]
                .concat()
            };
            let apply_now = workload.apply_held_now(namespace, name);
            let mut audit = vec![
                ("decision", "held"),
                ("pending", hold.pending.as_str()),
                ("apply-now", apply_now.as_str()),
            ];
            let before_slot = slot
                .as_ref()
                .map(|at| [BEFORE_SLOT, at, AFTER_SLOT].concat());
            if let Some(at) = &slot {
                audit.push(("slot", at));
            }
            match (no_window, &before_slot) {
                (true, Some(reason)) => audit.push(("reason", reason)),
                (true, None) => audit.push(("reason", NO_WINDOW)),
                (false, _) => {}
            }
            response(true, None, Some((&audit, warning)))
        }
        Decision::Release {
            workload,
            released,
            because,
            invalid_remembered,
            ..
        } => {
            let kind = workload.kind();
            let field = workload.control_path().join(".");
            let (warning, reason) = match invalid_remembered {
                None => (
                    format!("restage-gate: {kind} rollout released ({because}); now rolling out: {released}"),
                    because,
                ),
                Some(text) => (
                    format!("restage-gate: {kind} released, API default {field} restored (remembered one invalid): {because}"),
                    format!("{because}; remembered {field} {text} is not valid for a {kind}, restored the API default"),
                ),
            };
            let audit = [
                ("decision", "released"),
                ("released", released.as_str()),
                ("reason", reason.as_str()),
            ];
            response(true, None, Some((&audit, warning)))
        }
        Decision::RollNow { workload, why } => {
            let warning = format!("restage-gate: {} rolls now: {why}", workload.kind());
            let audit = [("decision", "rolling"), ("reason", why.as_str())];
            response(true, None, Some((&audit, warning)))
        }
        Decision::NotHeld { workload } => {
            let warning = format!(
                "restage-gate: {} is not held; removed {}",
                workload.kind(),
                markers::RELEASE_ANNOTATION
            );
            let audit = [("decision", "not-held")];
            response(true, None, Some((&audit, warning)))
        }
        Decision::Reject { message, bindings } => {
            let warning = format!("restage-gate: refused binding change {bindings}");
            let audit = [("decision", "rejected"), ("bindings", bindings.as_str())];
            response(false, Some(message), Some((&audit, warning)))
        }
    };
    (answer, changed)
}

pub fn unreadable(why: &str) -> Answer {
    let warning = format!("restage-gate: accepted unchanged, request not readable: {why}");
    let audit = [("decision", "unreadable"), ("reason", why)];
    response(true, None, Some((&audit, warning)))
}

fn response(
    accepted: bool,
    message: Option<String>,
    notice: Option<(&[(&'static str, &str)], String)>,
) -> Answer {
    let (audit_annotations, warnings) = match notice {
        Some((audit, warning)) => (
            Some(audit.iter().map(|(k, v)| (*k, v.to_string())).collect()),
            Some(vec![shorten(warning)]),
        ),
        None => (None, None),
    };
    Answer {
        accepted,
        message,
        audit_annotations,
        warnings,
    }
}

/// Cuts a warning to `WARNING_LIMIT` characters, ending in `…` when cut.
fn shorten(text: String) -> String {
    if text.chars().count() <= WARNING_LIMIT {
        return text;
    }
    let mut short: String = text.chars().take(WARNING_LIMIT - 1).collect();
    short.push('…');
    short
}
