//! restage-gate: a Kubewarden policy that stops service-binding changes from restarting
//! running applications. A workload UPDATE whose only pod-template change is a binding
//! projection is let through with its rollout held (StatefulSet and DaemonSet: `updateStrategy:
//! OnDelete`; Deployment: `paused`) until the app is restarted or restaged anyway, or a
//! maintenance window opens (see docs/design.md).

// The policy's rules.
mod admission;
pub mod clock;
mod decision;
pub mod markers;
mod pending;
mod request;
mod response;
mod settings;
pub mod template;
mod view;
pub mod window;
pub mod workload;

// The module's allocator for `validate` calls: the global allocator on the module's own
// target only, tested everywhere. (The JSON machinery below the rules is the `raw` crate,
// src/raw/.)
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod arena;

/// The reference the fast path is checked against (tests and the differential fuzz target).
#[cfg(any(test, feature = "oracle"))]
pub mod oracle;

/// What the black-box test crate (e2e-tests/validate) calls below `validate`, one part at a
/// time: the decision table, the request's reader, the settings, the template's reading.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::admission::Admission;
    pub use crate::decision::decide;
    pub use crate::response::{edit, BEFORE_SLOT, NO_WINDOW};
    pub use crate::settings::Settings;
    pub use crate::template::compare::compare;
    pub use crate::view::{at, items};
    pub use raw::{Node, Reach, Shape, Tree};

    /// An object's JSON as the policy reads a request's `oldObject`: the members its read plan
    /// names, `status` included.
    pub fn read_as_old_object(text: &str) -> Option<serde_json::Value> {
        raw::read_object(text, &crate::admission::read_plan(), true).map(|o| o.read)
    }
}

use kubewarden_policy_sdk::response::ValidationResponse;
use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use kubewarden_policy_sdk::wapc_guest::CallResult;
use serde_json::Value;

pub use crate::request::answer;
pub use crate::response::WARNING_LIMIT;
use crate::settings::Settings;
use crate::template::artefacts::ArtefactRules;
use crate::template::classify::Change;

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

/// waPC `validate`. Never returns `Err`: Kubewarden would turn it into a rejection (code 500).
pub fn validate(payload: &[u8]) -> CallResult {
    Ok(arena::evaluation(|| answer(payload, clock::now())))
}

/// The answer to one request at `now`, as the SDK's type (for tests and tools).
pub fn evaluate(payload: &[u8], now: clock::UtcTime) -> ValidationResponse {
    // `answer` writes a ValidationResponse; reading it back cannot fail.
    serde_json::from_slice(&answer(payload, now)).unwrap_or(ValidationResponse {
        accepted: true,
        message: None,
        code: None,
        mutated_object: None,
        audit_annotations: None,
        warnings: None,
    })
}

/// Two pod templates, as JSON text, compared as `validate` compares them (for the native
/// benchmarks); `None` when either is not JSON.
pub fn compare_templates(old: &str, new: &str, rules: &ArtefactRules) -> Option<Change> {
    let shape = &template::artefacts::TEMPLATE_SHAPE;
    let (old, new) = (
        raw::Node::template(old, shape)?,
        raw::Node::template(new, shape)?,
    );
    Some(template::compare::compare(&old, &new, rules))
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
