//! `make demo` without kwctl runs the module in restage-gate-demo's waPC host on the wasmi
//! interpreter; the suites and kwctl run it on wasmtime. Both hosts must answer alike, so the
//! demo cannot show a decision the real runtime would not make.

use std::time::SystemTime;

use restage_gate::clock;
use restage_gate::markers::HELD_SINCE_ANNOTATION;
use restage_gate_demo::interpreter;
use restage_gate_demo::steps::{window_closed, window_open};
use restage_gate_e2e::bundled;
use restage_gate_e2e::host::{policy_path, policy_under_test};
use restage_gate_evaluation::admission::read_request_file;
use restage_gate_evaluation::guest::Guest;
use restage_gate_testkit::hold::annotation_path;
use serde_json::{json, Value};

fn light() -> interpreter::Module {
    interpreter::Module::load(&policy_path()).expect("the interpreter loads policy.wasm")
}

/// The response with a clock reading in `held-since` (one taken between `from` and `to`, not
/// the request's own) replaced by `<now>`: the two hosts read the clock at different instants.
fn without_clock(mut response: Value, request: &Value, from: &str, to: &str) -> Value {
    let held_since = annotation_path(HELD_SINCE_ANNOTATION);
    let old = request.pointer(&format!("/oldObject{held_since}")).cloned();
    if let Some(since) = response.pointer_mut(&format!("/mutated_object{held_since}")) {
        if Some(&*since) != old.as_ref() {
            let reading = since.as_str().unwrap_or_default();
            assert!(
                from <= reading && reading <= to,
                "held-since {reading} is not a clock reading taken between {from} and {to}"
            );
            *since = json!("<now>");
        }
    }
    response
}

#[test]
fn the_interpreter_answers_every_bundled_request_as_wasmtime_does() {
    let light = light();
    let paths = bundled::bundled_request_paths();
    assert!(!paths.is_empty(), "no bundled requests");
    // the demo's settings: no window, reject mode, a window open now, one not open now
    let settings_of_the_demo = [
        json!({}),
        json!({"mode": "reject"}),
        window_open(),
        window_closed(SystemTime::now()),
    ];
    for settings in settings_of_the_demo {
        for path in &paths {
            let request = read_request_file(path).expect("a bundled request");
            let input = json!({"settings": settings, "request": request});
            let from = clock::now().rfc3339();
            let wasmtime = policy_under_test()
                .validate(&input)
                .expect("wasmtime answers");
            let interpreted = light.validate(&input).expect("the interpreter answers");
            let to = clock::now().rfc3339();
            assert_eq!(
                without_clock(interpreted, &request, &from, &to),
                without_clock(wasmtime, &request, &from, &to),
                "{} with settings {settings}",
                path.display()
            );
        }
    }
}

#[test]
fn the_interpreter_checks_settings_and_reports_the_protocol_as_wasmtime_does() {
    let light = light();
    for settings in [
        json!({}),
        json!({"mode": "reject"}),
        json!({"mode": "later"}),
        json!({"maintenanceWindows": [{"days": ["Sat"], "start": "25:00", "end": "04:00"}]}),
    ] {
        assert_eq!(
            light.validate_settings(&settings),
            policy_under_test().validate_settings(&settings),
            "{settings}"
        );
    }
    assert_eq!(
        light.protocol_version(),
        policy_under_test().protocol_version()
    );
}

#[test]
fn a_failed_guest_call_is_an_error_carrying_the_guests_message_in_both_hosts() {
    let light = light()
        .call("no-such-function", b"{}")
        .expect_err("an unknown waPC function fails");
    let wasmtime = policy_under_test()
        .call("no-such-function", b"{}")
        .expect_err("an unknown waPC function fails");
    let guest_message = light
        .strip_prefix("no-such-function failed: ")
        .unwrap_or_else(|| panic!("{light}"));
    assert!(
        !guest_message.is_empty() && wasmtime.contains(guest_message),
        "interpreter: {light}\nwasmtime: {wasmtime}"
    );
}
