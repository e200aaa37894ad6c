//! The floor restage-gate's cost is measured against: built like the policy (same target,
//! same release profile, same SDK), its `validate` parses the same ValidationRequest into a
//! `serde_json::Value` and accepts. Nothing a policy does can cost less.

use kubewarden_policy_sdk::wapc_guest::CallResult;

#[cfg(target_arch = "wasm32")]
#[no_mangle]
pub extern "C" fn wapc_init() {
    use kubewarden_policy_sdk::wapc_guest::register_function;
    register_function("validate", validate);
    register_function(
        "protocol_version",
        kubewarden_policy_sdk::protocol_version_guest,
    );
}

pub fn validate(payload: &[u8]) -> CallResult {
    // black_box: the parse must happen even though its result is not used
    let request = serde_json::from_slice::<serde_json::Value>(payload);
    std::hint::black_box(&request);
    kubewarden_policy_sdk::accept_request()
}
