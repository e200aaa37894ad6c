//! A decision as an admission response: the request's own object edited in place, warnings
//! for the client and audit annotations for the log.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::json::Unwritable;
use crate::markers;
use crate::object::{Edited, Object};
use crate::policy::Decision;
use crate::workload;

/// Admission warnings should stay under this many characters (kubectl shows them whole).
pub const WARNING_LIMIT: usize = 120;

/// The SDK's `ValidationResponse`, field for field, with the mutated object written from the
/// request's own raw JSON instead of a tree of it.
#[derive(Serialize)]
pub struct Answer<'o, 'a> {
    accepted: bool,
    message: Option<String>,
    code: Option<u16>,
    /// Written last, by `Edited::write`.
    #[serde(skip)]
    mutated_object: Option<Edited<'o, 'a>>,
    audit_annotations: Option<HashMap<String, String>>,
    warnings: Option<Vec<String>>,
}

impl Answer<'_, '_> {
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serialising strings and JSON cannot fail; if it ever did, accept.
        self.write()
            .unwrap_or_else(|_| br#"{"accepted":true}"#.to_vec())
    }

    fn write(&self) -> serde_json::Result<Vec<u8>> {
        let mut out = serde_json::to_vec(self)?;
        // The other members, closed by the answer's brace; the mutated object joins them.
        if out.pop() != Some(b'}') {
            return Err(serde::ser::Error::custom("the answer is not a JSON object"));
        }
        out.extend_from_slice(br#","mutated_object":"#);
        match &self.mutated_object {
            Some(object) => object.write(&mut out)?,
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
        Ok(out)
    }
}

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

/// Turns a decision into a response, editing the request's own object.
pub fn respond<'o, 'a>(
    decision: Decision,
    object: &'o mut Object<'a>,
    namespace: &str,
    name: &str,
) -> Answer<'o, 'a> {
    let changed = match edit(&decision, &mut object.read) {
        Err(Unwritable(why)) => return unreadable(&why),
        Ok(changed) => changed,
    };
    let object: &'o Object<'a> = object;
    let mutated = || changed.then(|| object.edited());
    match decision {
        Decision::Accept => response(true, None, None, None),
        Decision::Unreadable(why) => unreadable(&why),
        Decision::Hold {
            workload,
            hold,
            first,
        } => {
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
            response(true, None, mutated(), Some((&audit, warning)))
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
            response(true, None, mutated(), Some((&audit, warning)))
        }
        Decision::RollNow { workload, why } => {
            let warning = format!("restage-gate: {} rolls now: {why}", workload.kind());
            let audit = [("decision", "rolling"), ("reason", why.as_str())];
            response(true, None, None, Some((&audit, warning)))
        }
        Decision::NotHeld { workload } => {
            let warning = format!(
                "restage-gate: {} is not held; removed {}",
                workload.kind(),
                markers::RELEASE_ANNOTATION
            );
            let audit = [("decision", "not-held")];
            response(true, None, mutated(), Some((&audit, warning)))
        }
        Decision::Reject { message, bindings } => {
            let warning = format!("restage-gate: refused binding change {bindings}");
            let audit = [("decision", "rejected"), ("bindings", bindings.as_str())];
            response(false, Some(message), None, Some((&audit, warning)))
        }
    }
}

pub fn unreadable<'o, 'a>(why: &str) -> Answer<'o, 'a> {
    let warning = format!("restage-gate: accepted unchanged, request not readable: {why}");
    let audit = [("decision", "unreadable"), ("reason", why)];
    response(true, None, None, Some((&audit, warning)))
}

fn response<'o, 'a>(
    accepted: bool,
    message: Option<String>,
    mutated_object: Option<Edited<'o, 'a>>,
    notice: Option<(&[(&str, &str)], String)>,
) -> Answer<'o, 'a> {
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
    Answer {
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
