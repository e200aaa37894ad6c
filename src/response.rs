//! A decision as an admission response: the request's own object edited in place, warnings
//! for the client and audit annotations for the log.

use std::collections::HashMap;

use kubewarden_policy_sdk::response::ValidationResponse;
use serde_json::Value;

use crate::json::Unwritable;
use crate::markers;
use crate::policy::Decision;
use crate::workload;

/// Admission warnings should stay under this many characters (kubectl shows them whole).
pub const WARNING_LIMIT: usize = 120;

/// Turns a decision into a response, editing the request's own object in place.
pub fn respond(
    decision: Decision,
    mut object: Value,
    namespace: &str,
    name: &str,
) -> ValidationResponse {
    match decision {
        Decision::Accept => response(true, None, None, None),
        Decision::Unreadable(why) => unreadable(&why),
        Decision::Hold {
            workload,
            hold,
            first,
        } => match workload::hold(&mut object, workload, &hold) {
            Err(Unwritable(why)) => unreadable(&why),
            Ok(changed) => {
                let kind = workload.kind();
                let warning = if first {
                    format!(
                        "restage-gate: {kind} rollout held; {} applies at the next restart or restage",
                        hold.pending
                    )
                } else {
                    format!(
                        "restage-gate: {kind} rollout held since {}; pending: {}",
                        hold.held_since, hold.pending
                    )
                };
                let apply_now = workload.apply_held_now(namespace, name);
                let audit = [
                    ("decision", "held"),
                    ("pending", hold.pending.as_str()),
                    ("apply-now", apply_now.as_str()),
                ];
                response(
                    true,
                    None,
                    changed.then_some(object),
                    Some((&audit, warning)),
                )
            }
        },
        Decision::Release {
            workload,
            restore,
            released,
            because,
            invalid_remembered,
        } => match workload::release(&mut object, workload, restore) {
            Err(Unwritable(why)) => unreadable(&why),
            Ok(changed) => {
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
                response(
                    true,
                    None,
                    changed.then_some(object),
                    Some((&audit, warning)),
                )
            }
        },
        Decision::RollNow { workload, why } => {
            let warning = format!("restage-gate: {} rolls now: {why}", workload.kind());
            let audit = [("decision", "rolling"), ("reason", why.as_str())];
            response(true, None, None, Some((&audit, warning)))
        }
        Decision::NotHeld { workload } => match markers::remove_release_request(&mut object) {
            Err(Unwritable(why)) => unreadable(&why),
            Ok(changed) => {
                let warning = format!(
                    "restage-gate: {} is not held; removed {}",
                    workload.kind(),
                    markers::RELEASE_ANNOTATION
                );
                let audit = [("decision", "not-held")];
                response(
                    true,
                    None,
                    changed.then_some(object),
                    Some((&audit, warning)),
                )
            }
        },
        Decision::Reject { message, bindings } => {
            let warning = format!("restage-gate: refused binding change {bindings}");
            let audit = [("decision", "rejected"), ("bindings", bindings.as_str())];
            response(false, Some(message), None, Some((&audit, warning)))
        }
    }
}

pub fn unreadable(why: &str) -> ValidationResponse {
    let warning = format!("restage-gate: accepted unchanged, request not readable: {why}");
    let audit = [("decision", "unreadable"), ("reason", why)];
    response(true, None, None, Some((&audit, warning)))
}

fn response(
    accepted: bool,
    message: Option<String>,
    mutated_object: Option<Value>,
    notice: Option<(&[(&str, &str)], String)>,
) -> ValidationResponse {
    let (audit_annotations, warnings) = match notice {
        Some((audit, warning)) => (
            Some(
                audit
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<HashMap<_, _>>(),
            ),
            Some(vec![shorten(warning)]),
        ),
        None => (None, None),
    };
    ValidationResponse {
        accepted,
        message,
        code: None,
        mutated_object,
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
