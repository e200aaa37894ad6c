//! `validate_settings` on arbitrary JSON (and bytes): never a panic, always valid/invalid.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let out = restage_gate::validate_settings(data).expect("validate_settings never returns Err");
    let response: serde_json::Value = serde_json::from_slice(&out).expect("a JSON response");
    let valid = response["valid"].as_bool().expect("valid is a boolean");
    assert!(
        valid || response["message"].is_string(),
        "a refusal says why"
    );
});
