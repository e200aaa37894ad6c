//! restage-gate: a Kubewarden policy that stops service-binding changes from restarting
//! running applications. A StatefulSet UPDATE whose only pod-template change is a binding
//! projection is let through with its rollout held (`updateStrategy: OnDelete`) until the app
//! is restarted or restaged anyway, or a maintenance window opens (see DESIGN.md).

pub mod artefacts;
pub mod classify;
pub mod clock;
pub mod hold;
pub mod policy;
pub mod settings;
pub mod window;

#[cfg(test)]
mod tests;

use std::collections::HashMap;

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use kubewarden_policy_sdk::wapc_guest::CallResult;
use serde::Deserialize;
use serde_json::Value;

use crate::clock::UtcTime;
use crate::hold::Unwritable;
use crate::policy::{decide, Admission, Decision};
use crate::settings::Settings;

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn wapc_init() {
    use kubewarden_policy_sdk::wapc_guest::register_function;
    register_function("validate", validate);
    register_function("validate_settings", validate_settings);
    register_function(
        "protocol_version",
        kubewarden_policy_sdk::protocol_version_guest,
    );
}

/// Admission warnings should stay under this many characters (kubectl shows them whole).
pub const WARNING_LIMIT: usize = 120;

/// waPC `validate`. Never returns `Err`: Kubewarden would turn it into a rejection (code 500).
pub fn validate(payload: &[u8]) -> CallResult {
    Ok(encode(&evaluate(payload, clock::now())))
}

/// waPC `validate_settings`. Every refusal names the field and the value.
pub fn validate_settings(payload: &[u8]) -> CallResult {
    let verdict = serde_json::from_slice::<Value>(payload)
        .map_err(|e| format!("settings: not JSON ({e})"))
        .and_then(|v| Settings::from_value(&v));
    let response = SettingsValidationResponse {
        valid: verdict.is_ok(),
        message: verdict.err(),
    };
    Ok(serde_json::to_vec(&response).unwrap_or_else(|_| br#"{"valid":false}"#.to_vec()))
}

/// The ValidationRequest fields the policy reads. The SDK's `ValidationRequest` also builds the
/// user info and options (hash sets seeded from WASI randomness); the policy never reads them,
/// so they are skipped while parsing. Absent or null strings read as empty.
#[derive(Deserialize)]
struct Payload {
    #[serde(default)]
    settings: Value,
    request: Request,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Request {
    operation: Option<String>,
    kind: Option<Kind>,
    sub_resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    object: Value,
    old_object: Value,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Kind {
    group: Option<String>,
    kind: Option<String>,
}

fn text(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or_default()
}

/// The whole evaluation of one request at `now`: read, decide, respond.
pub fn evaluate(payload: &[u8], now: UtcTime) -> ValidationResponse {
    let Ok(Payload {
        settings,
        request: r,
    }) = serde_json::from_slice::<Payload>(payload)
    else {
        return unreadable("the payload is not a ValidationRequest");
    };
    let settings = match Settings::from_value(&settings) {
        Ok(settings) => settings,
        Err(message) => return unreadable(&message),
    };
    let kind = r.kind.unwrap_or_default();
    let decision = decide(
        &Admission {
            operation: text(&r.operation),
            group: text(&kind.group),
            kind: text(&kind.kind),
            sub_resource: text(&r.sub_resource),
            namespace: text(&r.namespace),
            name: text(&r.name),
            object: &r.object,
            old_object: &r.old_object,
        },
        &settings,
        now,
    );
    respond(decision, r.object)
}

/// Turns a decision into a response, editing the request's own object in place.
fn respond(decision: Decision, mut object: Value) -> ValidationResponse {
    match decision {
        Decision::Accept => response(true, None, None, None),
        Decision::Unreadable(why) => unreadable(&why),
        Decision::Hold { hold, first } => match hold::apply(&mut object, &hold) {
            Err(Unwritable(why)) => unreadable(&why),
            Ok(changed) => {
                let warning = if first {
                    format!(
                        "restage-gate: rollout held; {} applies at the next restart or restage",
                        hold.pending
                    )
                } else {
                    format!(
                        "restage-gate: rollout held since {}; pending: {}",
                        hold.held_since, hold.pending
                    )
                };
                let audit = [("decision", "held"), ("pending", hold.pending.as_str())];
                response(
                    true,
                    None,
                    changed.then_some(object),
                    Some((&audit, warning)),
                )
            }
        },
        Decision::Release {
            strategy,
            released,
            because,
        } => match hold::release(&mut object, strategy) {
            Err(Unwritable(why)) => unreadable(&why),
            Ok(changed) => {
                let warning = format!(
                    "restage-gate: rollout released ({because}); now rolling out: {released}"
                );
                let audit = [
                    ("decision", "released"),
                    ("released", released.as_str()),
                    ("reason", because.as_str()),
                ];
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

fn unreadable(why: &str) -> ValidationResponse {
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

fn encode(response: &ValidationResponse) -> Vec<u8> {
    // Serialising a response of strings and JSON values cannot fail; if it ever did, accept.
    serde_json::to_vec(response).unwrap_or_else(|_| br#"{"accepted":true}"#.to_vec())
}
