//! The committed example requests and held workloads are exactly what the models produce
//! (`BLESS=1` rewrites them), so the demo and the bats suite always show the current formats,
//! and `make demo` explains every request.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use restage_gate_demo::steps::{weekday, Settings, SPREAD, STEPS};
use restage_gate_e2e::bundled;
use restage_gate_e2e::host::policy_under_test;
use restage_gate_evaluation::admission::{read_request_file, Outcome};
use restage_gate_evaluation::guest::Guest;
use serde_json::{json, Value};

/// The file at `path` holds `value`, pretty-printed; with `BLESS` set, it is written so.
fn matches_the_model(path: &Path, value: &Value) {
    let want = serde_json::to_string_pretty(value).expect("serialisable") + "\n";
    if std::env::var_os("BLESS").is_some() {
        let dir = path.parent().expect("a file in a directory");
        std::fs::create_dir_all(dir).expect("a writable fixtures dir");
        std::fs::write(path, &want).expect("writable");
        return;
    }
    let have = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e} (run with BLESS=1 to write it)", path.display()));
    assert!(
        have == want,
        "{} is stale: run `BLESS=1 cargo test -p restage-gate-e2e --test bundled_requests`",
        path.display()
    );
}

#[test]
fn bundled_requests_match_the_models() {
    let dir = bundled::requests_dir();
    for (name, _, review) in bundled::requests() {
        matches_the_model(&dir.join(name), &review);
    }
}

#[test]
fn held_fixtures_match_the_models() {
    let fixtures = bundled::held_fixtures();
    assert!(!fixtures.is_empty(), "no held fixtures");
    for (path, object) in &fixtures {
        matches_the_model(path, object);
    }
    // The bats suite takes every file there: none may be left from a kind no longer held.
    let mut generated: Vec<PathBuf> = fixtures.into_iter().map(|(p, _)| p).collect();
    generated.sort();
    let dirs: BTreeSet<&Path> = generated.iter().filter_map(|p| p.parent()).collect();
    let mut committed: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        committed.extend(
            entries
                .filter_map(|e| Some(e.ok()?.path()))
                .filter(|p| p.is_file()),
        );
    }
    committed.sort();
    assert_eq!(committed, generated);
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
    let now = SystemTime::now();
    for step in STEPS {
        let settings = step.settings.at(now);
        assert!(
            settings.as_ref().is_ok_and(Value::is_object),
            "{}: settings {settings:?}",
            step.title
        );
        assert!(!step.explanation.is_empty(), "{}", step.title);
    }
}

#[test]
fn the_demos_window_settings_release_only_while_the_window_is_open() {
    let now = SystemTime::now();
    let spread = |opened_minutes_ago| Settings::WindowSpread { opened_minutes_ago };
    for (settings, decision) in [
        (Settings::WindowOpen, "released"),
        (Settings::WindowClosed, "held"),
        (spread(5), "held"),
        (spread(35), "released"),
    ] {
        let steps: Vec<_> = STEPS.iter().filter(|s| s.settings == settings).collect();
        assert!(!steps.is_empty(), "no step with {settings:?}");
        for step in steps {
            let request = read_request_file(&bundled::requests_dir().join(step.request))
                .expect("a bundled request");
            let settings = step.settings.at(now).expect("settings");
            assert_eq!(
                policy_under_test().validate_settings(&settings),
                Ok(None),
                "{settings}"
            );
            let response = policy_under_test()
                .validate(&json!({"settings": settings, "request": request}))
                .expect("the module answers");
            assert_eq!(
                Outcome::new(&request, &response).decision(),
                decision,
                "{}",
                step.title
            );
        }
    }
}

/// The demo's spreading window is shown before and after the slot its explanation names, with a
/// minute to spare for the clock.
#[test]
fn the_demos_spread_steps_name_the_slot_of_the_workload_and_fall_on_either_side_of_it() {
    let mut shown = 0;
    for step in STEPS {
        let Settings::WindowSpread { opened_minutes_ago } = step.settings else {
            continue;
        };
        let request = read_request_file(&bundled::requests_dir().join(step.request))
            .expect("a bundled request");
        let uid = request["object"]["metadata"]["uid"].as_str();
        assert!(uid.is_some(), "{}: the object has a uid", step.title);
        let slot = u64::from(restage_gate::window::slot(uid, SPREAD));
        assert!(
            step.explanation.contains(&format!("minute {slot}")),
            "{}: the explanation names minute {slot}",
            step.title
        );
        assert!(
            opened_minutes_ago + 1 < slot || opened_minutes_ago >= slot,
            "{}: {opened_minutes_ago} minutes is too close to the slot {slot}",
            step.title
        );
        shown += 1;
    }
    assert_eq!(shown, 2, "a step before the slot and one after");
}

#[test]
fn the_demo_reads_the_weekday_as_the_policy_does() {
    // a week of hours from 2026-11-30, a Monday, and the epoch
    let monday = 1_795_996_800;
    for seconds in (0..7 * 86_400)
        .step_by(3_600)
        .map(|s| monday + s)
        .chain([0, 59])
    {
        let now = UNIX_EPOCH + Duration::from_secs(seconds);
        let policy =
            restage_gate::clock::UtcTime(i64::try_from(seconds).expect("in range")).weekday();
        assert_eq!(weekday(now), policy, "{seconds}");
    }
}
