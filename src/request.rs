//! Reads a Kubewarden ValidationRequest: only the members the decision needs.

use kubewarden_policy_sdk::response::ValidationResponse;
use serde::Deserialize;
use serde_json::Value;

use crate::clock::UtcTime;
use crate::policy::{decide, Admission};
use crate::response::{respond, unreadable};
use crate::settings::Settings;

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
    respond(decision, r.object, text(&r.namespace), text(&r.name))
}
