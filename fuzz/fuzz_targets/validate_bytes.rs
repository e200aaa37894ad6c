//! `validate` on arbitrary bytes: never a panic, never an error, always an accepting answer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let out = restage_gate::validate(data).expect("validate never returns Err");
    let response: serde_json::Value = serde_json::from_slice(&out).expect("a JSON response");
    assert!(
        response["accepted"].is_boolean(),
        "a well-formed ValidationResponse"
    );
});
