//! Reads a Kubewarden ValidationRequest: only the members the decision needs.

use serde::Deserialize;
use serde_json::Value;

use crate::clock::UtcTime;
use crate::json;
use crate::object::{self, Object};
use crate::policy::{decide, Admission};
use crate::response::{respond, unreadable};
use crate::settings::Settings;

/// The ValidationRequest fields the policy reads. The SDK's `ValidationRequest` also builds the
/// user info and options (hash sets seeded from WASI randomness); the policy never reads them,
/// so they are skipped while parsing. Absent or null strings read as empty. The objects are
/// kept as raw JSON and read only as deep as the policy looks (`object.rs`).
#[derive(Deserialize)]
struct Payload<'a> {
    #[serde(default)]
    settings: Value,
    #[serde(borrow)]
    request: Request<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Request<'a> {
    operation: Option<String>,
    kind: Option<Kind>,
    sub_resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    #[serde(borrow, deserialize_with = "object::without_status")]
    object: Object<'a>,
    #[serde(borrow)]
    old_object: Object<'a>,
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

/// The whole evaluation of one request at `now`: read, decide, respond. The answer's bytes, as
/// `validate` returns them.
pub fn answer(payload: &[u8], now: UtcTime) -> Vec<u8> {
    // JSON text is UTF-8: checked once here, strings are then read without a check each.
    let json = json::utf8(payload).ok_or(());
    let Ok(Payload {
        settings,
        request: r,
    }) = json.and_then(|t| serde_json::from_str::<Payload>(t).map_err(|_| ()))
    else {
        return unreadable("the payload is not a ValidationRequest").to_bytes();
    };
    let settings = match Settings::from_value(&settings) {
        Ok(settings) => settings,
        Err(message) => return unreadable(&message).to_bytes(),
    };
    let (mut object, old) = (r.object.read_from(json.unwrap_or_default()), r.old_object);
    let kind = r.kind.unwrap_or_default();
    let decision = decide(
        &Admission {
            operation: text(&r.operation),
            group: text(&kind.group),
            kind: text(&kind.kind),
            sub_resource: text(&r.sub_resource),
            namespace: text(&r.namespace),
            name: text(&r.name),
            object: &object.read,
            old_object: &old.read,
            template: object.template(),
            old_template: old.template(),
        },
        &settings,
        now,
    );
    respond(decision, &mut object, text(&r.namespace), text(&r.name)).to_bytes()
}
