//! A decision as an admission response: the request's own object edited in place, warnings
//! for the client and audit annotations for the log.

use serde_json::Value;

use crate::json::Unwritable;
use crate::markers;
use crate::object::{Edited, Object};
use crate::policy::Decision;
use crate::workload;
use crate::writer::{write_list, write_str, Members};

/// Admission warnings should stay under this many characters (kubectl shows them whole).
pub const WARNING_LIMIT: usize = 120;

/// The SDK's `ValidationResponse`, field for field (`code` is never set), written by hand: the
/// mutated object from the request's own raw JSON instead of a tree of it.
pub struct Answer<'o, 'a> {
    accepted: bool,
    message: Option<String>,
    mutated_object: Option<Edited<'o, 'a>>,
    audit_annotations: Option<Vec<(&'static str, String)>>,
    warnings: Option<Vec<String>>,
}

impl Answer<'_, '_> {
    pub fn to_bytes(&self) -> Vec<u8> {
        // Writing JSON to a Vec cannot fail; if it ever did, accept.
        self.write()
            .unwrap_or_else(|_| br#"{"accepted":true}"#.to_vec())
    }

    fn write(&self) -> serde_json::Result<Vec<u8>> {
        // Room for the whole answer at once, so it is seldom copied as it grows: the payload
        // holds the object and the old one.
        let object = self.mutated_object.as_ref().map_or(0, Edited::request_len);
        let mut out = Vec::with_capacity(1024 + object);
        let mut members = Members::open(&mut out);
        members.raw("accepted", if self.accepted { "true" } else { "false" });
        or_null(members.key("message"), &self.message, |out, m| {
            write_str(out, m)
        });
        members.raw("code", "null");
        or_null(
            members.key("audit_annotations"),
            &self.audit_annotations,
            |out, audit| {
                let mut map = Members::open(out);
                for (key, value) in audit {
                    write_str(map.key(key), value);
                }
                map.close();
            },
        );
        or_null(members.key("warnings"), &self.warnings, |out, warnings| {
            write_list(out, warnings, |out, warning| write_str(out, warning));
        });
        match &self.mutated_object {
            Some(object) => object.write(members.key("mutated_object"))?,
            None => members.raw("mutated_object", "null"),
        }
        members.close();
        Ok(out)
    }
}

/// `write` for a value that is there, `null` otherwise.
fn or_null<T>(out: &mut Vec<u8>, value: &Option<T>, write: impl FnOnce(&mut Vec<u8>, &T)) {
    match value {
        Some(value) => write(out, value),
        None => out.extend_from_slice(b"null"),
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
            // Concatenated, not formatted: every hold writes one, and `format!` costs several
            // times as much in the module.
            let warning = if first {
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
    notice: Option<(&[(&'static str, &str)], String)>,
) -> Answer<'o, 'a> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use kubewarden_policy_sdk::response::ValidationResponse;

    fn read_back(answer: &Answer) -> ValidationResponse {
        serde_json::from_slice(&answer.to_bytes()).expect("the SDK's ValidationResponse")
    }

    #[test]
    fn every_answer_reads_back_as_the_sdks_response() {
        let text = r#"{"metadata": {"name": "app", "annotations": {"a\"b": "x"}}, "spec": {"replicas": 1}}"#;
        let object: Object = serde_json::from_str(text).expect("an object");
        let object = object.read_from(text);
        let audit = [("decision", "held"), ("pending", "+db \"x\"")];
        let held = read_back(&response(
            true,
            None,
            Some(object.edited()),
            Some((&audit, "restage-gate: held\n".to_string())),
        ));
        assert!(held.accepted);
        let stored: Value = serde_json::from_str(text).expect("JSON");
        assert_eq!(held.mutated_object, Some(stored));
        assert_eq!(
            held.warnings,
            Some(vec!["restage-gate: held\n".to_string()])
        );
        let audit = held.audit_annotations.expect("audit annotations");
        assert_eq!(audit.len(), 2);
        assert_eq!(audit["pending"], "+db \"x\"");
        let refused = read_back(&response(false, Some("refused: \"db\"".into()), None, None));
        assert!(!refused.accepted);
        assert_eq!(refused.message.as_deref(), Some("refused: \"db\""));
        assert_eq!(refused.mutated_object, None);
        let plain = read_back(&response(true, None, None, None));
        assert!(plain.accepted && plain.message.is_none() && plain.code.is_none());
        assert!(plain.warnings.is_none() && plain.audit_annotations.is_none());
    }
}
