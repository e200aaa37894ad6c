//! The committed example requests are exactly what the models produce (`BLESS=1` rewrites
//! them), so the demo and the bats suite always show the current formats, and `make demo`
//! explains every one of them.

use restage_gate_demo::steps::STEPS;
use restage_gate_e2e::bundled;
use restage_gate_e2e::host::policy_under_test;
use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::guest::Guest;
use serde_json::json;

#[test]
fn bundled_requests_match_the_models() {
    let dir = bundled::requests_dir();
    let bless = std::env::var_os("BLESS").is_some();
    for (name, _, review) in bundled::requests() {
        let path = dir.join(name);
        let want = serde_json::to_string_pretty(&review).expect("serialisable") + "\n";
        if bless {
            std::fs::write(&path, &want).expect("writable requests dir");
            continue;
        }
        let have = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (run with BLESS=1 to write it)", path.display()));
        assert!(
            have == want,
            "{} is stale: run `BLESS=1 cargo test -p restage-gate-e2e --test bundled_requests`",
            path.display()
        );
    }
}

#[test]
fn bundled_requests_are_decided_as_listed() {
    for (name, decision, review) in bundled::requests() {
        let request = &review["request"];
        let response = policy_under_test()
            .validate(&json!({"settings": {}, "request": request}))
            .expect("the module answers");
        assert_eq!(
            Outcome::new(request, &response).decision(),
            decision,
            "{name}"
        );
    }
}

#[test]
fn every_bundled_request_is_shown_and_explained() {
    let bundled: Vec<String> = bundled::bundled_request_paths()
        .iter()
        .filter_map(|p| Some(p.file_name()?.to_string_lossy().into_owned()))
        .collect();
    let mut shown: Vec<String> = STEPS.iter().map(|s| s.request.to_string()).collect();
    shown.sort();
    shown.dedup();
    assert_eq!(shown, bundled);
    for step in STEPS {
        assert!(
            serde_json::from_str::<serde_json::Value>(step.settings).is_ok_and(|s| s.is_object()),
            "{}: settings {}",
            step.title,
            step.settings
        );
        assert!(!step.explanation.is_empty(), "{}", step.title);
    }
}
