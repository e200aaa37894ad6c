//! A release writes back only what the API server accepts, never a default over an operator's
//! own strategy, and operators can ask for it with one annotation.

use serde_json::{json, Value};

use restage_gate_testkit::hold::annotation_path;
use restage_gate_testkit::kubectl::annotate;

use super::{
    annotation, bound, check, held, hold_paths, kind_of, orders_db, restarted, unbound, update,
    with, Expect, Request,
};

use restage_gate_testkit::projector::project;

use restage_gate::clock::UtcTime;
use restage_gate::markers::{
    self, HELD_LABEL, HELD_SINCE_ANNOTATION, PENDING_ANNOTATION, RELEASE_ANNOTATION,
    RELEASE_IN_WINDOW,
};
use restage_gate::window;
use restage_gate::workload::{StatefulSet, Workload, ORIGINAL_STRATEGY_ANNOTATION};

fn remembering(strategy: &str) -> Value {
    with(held(bound(), "+x"), |s| {
        s["metadata"]["annotations"][ORIGINAL_STRATEGY_ANNOTATION] = json!(strategy)
    })
}

fn audit(request: &Request, key: &str) -> Option<String> {
    request.run().audit_annotations?.get(key).cloned()
}

#[test]
fn an_invalid_remembered_strategy_restores_the_api_default_and_says_so() {
    let invalid = [
        "not json",
        r#"{"type": "Recreate"}"#,
        r#"{"type": "RollingUpdate", "rollingUpdate": {"partition": 2147483648}}"#,
        r#"{"type": "RollingUpdate", "rollingUpdate": {"partition": 1.5}}"#,
        r#"{"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0}}"#,
        r#"{"type": "OnDelete", "rollingUpdate": {"partition": 0}}"#,
        r#"{"type": "RollingUpdate", "surprise": true}"#,
        r#"[]"#,
    ];
    for strategy in invalid {
        let old = remembering(strategy);
        let request = update(old.clone(), with(old, restarted));
        let r = check(
            strategy,
            &request,
            Expect::Mutated("released", hold_paths(kind_of(&unbound()))),
        );
        let sts = r.mutated_object.expect("released");
        assert_eq!(
            sts["spec"]["updateStrategy"],
            StatefulSet.declared().control.default(),
            "{strategy}"
        );
        let warning = r.warnings.expect("warning").join(" ");
        assert!(
            warning.contains("API default spec.updateStrategy restored"),
            "{strategy}: {warning}"
        );
        let reason = r.audit_annotations.expect("audit")["reason"].clone();
        assert!(
            reason.contains(strategy) && reason.contains("restored the API default"),
            "{reason}"
        );
    }
}

#[test]
fn a_valid_remembered_strategy_is_restored_exactly() {
    for strategy in [
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2, "maxUnavailable": "50%"}}),
        json!({"type": "OnDelete"}),
        json!({"type": "RollingUpdate"}),
    ] {
        let old = remembering(&strategy.to_string());
        let r = update(old.clone(), with(old, restarted)).run();
        assert!(!audit_reason(&r).contains("default"));
        assert_eq!(
            r.mutated_object.expect("released")["spec"]["updateStrategy"],
            strategy
        );
    }
}

fn audit_reason(r: &kubewarden_policy_sdk::response::ValidationResponse) -> String {
    r.audit_annotations
        .as_ref()
        .map(|a| a["reason"].clone())
        .unwrap_or_default()
}

/// Labelled by hand: the held label, no remembered strategy, the operator's own canary.
fn hand_labelled(strategy: Value) -> Value {
    with(bound(), |s| {
        s["metadata"]["labels"][HELD_LABEL] = json!("true");
        s["spec"]["updateStrategy"] = strategy;
    })
}

#[test]
fn a_hand_set_label_remembers_the_strategy_the_workload_has() {
    let canary = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 3}});
    let old = hand_labelled(canary.clone());
    let kept = update(old.clone(), old.clone())
        .run()
        .mutated_object
        .expect("hold completed");
    assert_eq!(kept["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    let remembered = annotation(&kept, ORIGINAL_STRATEGY_ANNOTATION).expect("remembered");
    assert_eq!(
        serde_json::from_str::<Value>(remembered).expect("JSON"),
        canary
    );

    let released = update(old.clone(), with(old, restarted)).run();
    let sts = released.mutated_object.expect("label removed");
    assert_eq!(
        sts["spec"]["updateStrategy"], canary,
        "never partition 0 over a canary"
    );
    assert!(!markers::is_held(&sts));
}

#[test]
fn a_hand_set_label_on_on_delete_remembers_the_api_default() {
    let old = hand_labelled(json!({"type": "OnDelete"}));
    let kept = update(old.clone(), old.clone())
        .run()
        .mutated_object
        .expect("hold completed");
    let remembered = annotation(&kept, ORIGINAL_STRATEGY_ANNOTATION).expect("remembered");
    assert_eq!(
        serde_json::from_str::<Value>(remembered).expect("JSON"),
        StatefulSet.declared().control.default()
    );
    let released = update(old.clone(), with(old, restarted)).run();
    let sts = released.mutated_object.expect("released");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        StatefulSet.declared().control.default()
    );
}

fn release_requested(sts: Value) -> Value {
    with(sts, |s| annotate(s, RELEASE_ANNOTATION, "now"))
}

#[test]
fn the_release_annotation_releases_a_held_workload_at_once() {
    let old = held(bound(), "+orders-db");
    let request = update(old.clone(), release_requested(old));
    assert_eq!(
        audit(&request, "reason").as_deref(),
        Some("release requested")
    );
    let r = check(
        "release requested",
        &request,
        Expect::Mutated("released", {
            let mut paths = hold_paths(kind_of(&unbound()));
            paths.push(annotation_path(RELEASE_ANNOTATION));
            paths.sort();
            paths
        }),
    );
    let sts = r.mutated_object.expect("released");
    assert_eq!(
        sts["spec"]["updateStrategy"],
        StatefulSet.declared().control.default()
    );
    for key in [
        HELD_SINCE_ANNOTATION,
        PENDING_ANNOTATION,
        ORIGINAL_STRATEGY_ANNOTATION,
        RELEASE_ANNOTATION,
    ] {
        assert_eq!(annotation(&sts, key), None, "{key}");
    }
    assert_eq!(
        sts["spec"]["template"],
        bound()["spec"]["template"],
        "template untouched"
    );
    assert_eq!(audit(&request, "released").as_deref(), Some("+orders-db"));
}

#[test]
fn the_release_annotation_on_a_workload_not_held_is_only_removed() {
    let in_window = |sts| with(sts, |s| annotate(s, RELEASE_ANNOTATION, RELEASE_IN_WINDOW));
    for (name, old, new) in [
        ("no change", bound(), release_requested(bound())),
        ("with a bind", unbound(), release_requested(bound())),
        ("window, no change", bound(), in_window(bound())),
    ] {
        let r = check(
            name,
            &update(old, new),
            Expect::Mutated("not-held", vec![annotation_path(RELEASE_ANNOTATION)]),
        );
        let sts = r.mutated_object.expect("annotation removed");
        assert_eq!(
            sts["spec"]["updateStrategy"],
            bound()["spec"]["updateStrategy"],
            "{name}"
        );
    }
}

#[test]
fn the_release_annotation_in_reject_mode_changes_nothing() {
    let request = update(bound(), release_requested(bound())).settings(json!({"mode": "reject"}));
    check("reject mode", &request, Expect::Plain);
}

/// Every day, all day: a window open whatever the time.
fn window_open() -> Value {
    json!({"maintenanceWindows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"],
        "start": "00:00", "end": "00:00"}]})
}

/// Windows none of which is open at `NOW`.
fn windows_closed() -> [Value; 3] {
    [
        json!({}),
        json!({"maintenanceWindows": [{"days": ["Sat", "Sun"], "start": "02:00", "end": "04:00"}]}),
        json!({"maintenanceWindows": [{"days": ["Wed"], "start": "16:52", "end": "16:51"},
            {"days": ["Tue"], "start": "22:00", "end": "16:51"}]}),
    ]
}

/// Every kind held with a binding pending, as the fixture workloads are.
fn held_workloads() -> impl Iterator<Item = (&'static dyn Workload, Value)> {
    restage_gate::workload::kinds().map(|kind| {
        (
            kind,
            held(restage_gate_testkit::lookup::unbound(kind), "+orders-db"),
        )
    })
}

fn window_requested(object: Value) -> Value {
    with(object, |o| {
        annotate(o, RELEASE_ANNOTATION, RELEASE_IN_WINDOW)
    })
}

#[test]
fn a_window_release_inside_a_window_releases_every_kind_as_a_release_now_does() {
    for (kind, old) in held_workloads() {
        let window = update(old.clone(), window_requested(old.clone())).settings(window_open());
        let now = update(old.clone(), release_requested(old)).settings(window_open());
        let mut paths = hold_paths(kind);
        paths.push(annotation_path(RELEASE_ANNOTATION));
        paths.sort();
        let released = check(kind.kind(), &window, Expect::Mutated("released", paths));
        assert_eq!(
            released.mutated_object,
            now.run().mutated_object,
            "{kind}: the object a release now leaves"
        );
        let reason = audit(&window, "reason").unwrap_or_default();
        assert!(
            reason.starts_with("release requested in maintenance window "),
            "{kind}: {reason}"
        );
        assert_eq!(audit(&window, "released").as_deref(), Some("+orders-db"));
    }
}

#[test]
fn a_window_release_outside_every_window_only_drops_the_request() {
    for (kind, old) in held_workloads() {
        for settings in windows_closed() {
            let request = update(old.clone(), window_requested(old.clone())).settings(settings);
            let name = format!("{kind} {}", request.settings);
            let r = check(
                &name,
                &request,
                Expect::Mutated("held", vec![annotation_path(RELEASE_ANNOTATION)]),
            );
            assert_eq!(
                r.mutated_object.as_ref(),
                Some(&old),
                "{name}: the stored object, unchanged, so the API server writes nothing"
            );
            assert_eq!(audit(&request, "pending").as_deref(), Some("+orders-db"));
            assert_eq!(
                audit(&request, "reason").as_deref(),
                Some(restage_gate::internals::NO_WINDOW),
                "{name}"
            );
            let warning = r.warnings.unwrap_or_default().join(" ");
            assert!(
                warning.contains("no maintenance window open"),
                "{name}: {warning}"
            );
        }
    }
}

#[test]
fn a_window_release_outside_a_window_keeps_a_bind_in_the_same_write_held() {
    let old = held(bound(), "+x");
    let new = window_requested(with(old.clone(), |s| project(s, &orders_db())));
    let [_, saturday, _] = windows_closed();
    let request = update(old, new.clone()).settings(saturday);
    let r = request.run();
    assert_eq!(audit(&request, "decision").as_deref(), Some("held"));
    assert_eq!(audit(&request, "pending").as_deref(), Some("+x +orders-db"));
    let sts = r.mutated_object.expect("request dropped");
    assert_eq!(annotation(&sts, RELEASE_ANNOTATION), None);
    assert_eq!(sts["spec"]["template"], new["spec"]["template"]);
    assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
}

#[test]
fn a_window_release_outside_a_window_still_lets_a_restage_release() {
    for (kind, old) in held_workloads() {
        let restage = with(window_requested(old.clone()), restarted);
        let [_, saturday, _] = windows_closed();
        let request = update(old, restage).settings(saturday);
        assert_eq!(
            audit(&request, "decision").as_deref(),
            Some("released"),
            "{kind}"
        );
        assert_eq!(
            audit(&request, "reason").as_deref(),
            Some("restart or restage"),
            "{kind}"
        );
    }
}

#[test]
fn a_window_release_in_reject_mode_changes_nothing() {
    let old = held(bound(), "+orders-db");
    for settings in [window_open(), json!({})] {
        let mut settings = settings;
        settings["mode"] = json!("reject");
        let request = update(old.clone(), window_requested(old.clone())).settings(settings);
        check("reject mode", &request, Expect::Plain);
    }
}

/// Settings with one window, Wednesday 16:00 to 18:00 (around `NOW`), spreading its releases
/// over its first hour, in `mode`.
fn spread_window(mode: &str) -> Value {
    json!({"mode": mode, "maintenanceWindows": [{"days": ["Wed"], "start": "16:00",
        "end": "18:00", "spreadMinutes": 60}]})
}

/// When the spread window of `spread_window` opens for `object`: its start plus the slot of
/// its uid (Wednesday 2026-12-02 is day 1_796_169_600 / 86_400).
fn slot_of(object: &Value) -> UtcTime {
    let uid = object["metadata"]["uid"].as_str();
    let slot = i64::from(window::slot(uid, 60));
    assert!(slot > 0, "the test needs a slot after the window's start");
    UtcTime(1_796_169_600 + 16 * 3600 + slot * 60)
}

fn at(request: Request, now: UtcTime) -> Request {
    Request { now, ..request }
}

#[test]
fn a_spread_window_drops_a_window_release_until_the_workloads_slot_then_releases_it() {
    for (kind, old) in held_workloads() {
        let slot = slot_of(&old);
        let request =
            || update(old.clone(), window_requested(old.clone())).settings(spread_window("defer"));
        let before = at(request(), UtcTime(slot.0 - 1));
        let r = check(
            kind.kind(),
            &before,
            Expect::Mutated("held", vec![annotation_path(RELEASE_ANNOTATION)]),
        );
        assert_eq!(
            r.mutated_object.as_ref(),
            Some(&old),
            "{kind}: the stored object, unchanged, so the API server writes nothing"
        );
        let opens = slot.rfc3339();
        assert_eq!(audit(&before, "slot"), Some(opens.clone()), "{kind}");
        let reason = audit(&before, "reason").unwrap_or_default();
        assert!(
            reason.starts_with(restage_gate::internals::BEFORE_SLOT) && reason.contains(&opens),
            "{kind}: {reason}"
        );
        let warning = r.warnings.unwrap_or_default().join(" ");
        assert!(
            warning.contains(&format!(
                "stays held until its maintenance-window slot at {opens}"
            )),
            "{kind}: {warning}"
        );

        for now in [slot, UtcTime(slot.0 + 59)] {
            let on_time = at(request(), now);
            let mut paths = hold_paths(kind);
            paths.push(annotation_path(RELEASE_ANNOTATION));
            paths.sort();
            check(kind.kind(), &on_time, Expect::Mutated("released", paths));
            let reason = audit(&on_time, "reason").unwrap_or_default();
            assert_eq!(
                reason, "release requested in maintenance window Wed 16:00-18:00 UTC",
                "{kind}"
            );
        }
    }
}

#[test]
fn a_spread_window_releases_a_workload_without_a_uid_at_its_start() {
    let old = with(held(bound(), "+x"), |s| {
        s["metadata"].as_object_mut().map(|m| m.remove("uid"));
    });
    let request = update(old.clone(), window_requested(old)).settings(spread_window("defer"));
    let start = at(request, UtcTime(1_796_169_600 + 16 * 3600));
    assert_eq!(audit(&start, "decision").as_deref(), Some("released"));
}

#[test]
fn a_bind_inside_a_spread_window_before_its_slot_is_held_and_rolls_at_once_from_its_slot() {
    let slot = slot_of(&unbound());
    let bind = || update(unbound(), bound()).settings(spread_window("defer"));
    let before = at(bind(), UtcTime(slot.0 - 1));
    let r = check(
        "before its slot",
        &before,
        Expect::Mutated("held", hold_paths(kind_of(&unbound()))),
    );
    let warning = r.warnings.unwrap_or_default().join(" ");
    assert!(
        warning.starts_with(&format!(
            "restage-gate: StatefulSet rollout held until its maintenance-window slot at {}; pending: +",
            slot.rfc3339()
        )),
        "{warning}"
    );
    assert_eq!(audit(&before, "reason"), None, "nothing was dropped");
    check("from its slot", &at(bind(), slot), Expect::Plain);
}

#[test]
fn reject_mode_refuses_a_bind_inside_a_spread_window_before_its_slot_and_says_when_it_opens() {
    let slot = slot_of(&unbound());
    let bind = || update(unbound(), bound()).settings(spread_window("reject"));
    let r = check(
        "before its slot",
        &at(bind(), UtcTime(slot.0 - 1)),
        Expect::Rejected,
    );
    let message = r.message.unwrap_or_default();
    assert!(
        message.ends_with(&format!(
            ", or wait for a maintenance window (Wed 16:00-18:00 UTC; this workload's slot in the \
             open one starts at {}).",
            slot.rfc3339()
        )),
        "{message}"
    );
    check("from its slot", &at(bind(), slot), Expect::Plain);
}

#[test]
fn of_two_open_windows_the_one_whose_slot_has_come_releases() {
    let old = held(bound(), "+x");
    let slot = slot_of(&old);
    let both = json!({"maintenanceWindows": [
        {"days": ["Wed"], "start": "16:00", "end": "18:00", "spreadMinutes": 60},
        {"days": ["Wed"], "start": "00:00", "end": "18:00"}]});
    let request = update(old.clone(), window_requested(old)).settings(both);
    let before = at(request, UtcTime(slot.0 - 1));
    assert_eq!(
        audit(&before, "reason").as_deref(),
        Some("release requested in maintenance window Wed 00:00-18:00 UTC")
    );
}
