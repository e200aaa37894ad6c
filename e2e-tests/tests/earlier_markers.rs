//! The held state of an earlier release stays readable: workloads as restage-gate v0.1.0 left
//! them held (`e2e-tests/fixtures/held-v0.1.0/`, written once and never regenerated) are
//! released by today's module to exactly the control v0.1.0 remembered, with every marker gone,
//! and a further bind keeps them held. The markers' format is stated here as v0.1.0 wrote it,
//! not read from today's code, so a change of format fails this suite
//! (docs/install.md, "Rolling back, and the held state across releases").

use restage_gate_e2e::host::policy_under_test;
use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::guest::Guest;
use restage_gate_testkit::admission::{request, validation_request};
use restage_gate_testkit::fixtures::{self, cache_binding};
use restage_gate_testkit::projector::project;
use serde_json::{json, Value};

/// v0.1.0's markers: the label and annotations every held workload carries, and per kind the
/// annotation that remembers the control and where the control is.
const HELD_LABEL: &str = "restage-gate.io/held";
const PENDING: &str = "restage-gate.io/pending";
const HELD_SINCE: &str = "restage-gate.io/held-since";
const RELEASE: &str = "restage-gate.io/release";
const REMEMBERED: [(&str, &str, &str); 4] = [
    (
        "statefulset",
        "restage-gate.io/original-update-strategy",
        "/spec/updateStrategy",
    ),
    (
        "daemonset",
        "restage-gate.io/original-update-strategy",
        "/spec/updateStrategy",
    ),
    (
        "deployment",
        "restage-gate.io/original-paused",
        "/spec/paused",
    ),
    (
        "rollout",
        "restage-gate.io/original-rollout-paused",
        "/spec/paused",
    ),
];

fn held_by_v0_1_0(kind: &str) -> Value {
    let path = fixtures::dir().join(format!("held-v0.1.0/{kind}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).expect("JSON")
}

fn evaluate(old: &Value, new: &Value) -> (Outcome, Value) {
    let request = request("UPDATE", old, new);
    let response = policy_under_test()
        .validate(&validation_request(&json!({"mode": "defer"}), &request))
        .expect("validate answers");
    let outcome = Outcome::new(&request, &response);
    assert!(
        outcome.allowed,
        "{kind}: refused: {response:?}",
        kind = old["kind"]
    );
    let mut stored = new.clone();
    let patch: json_patch::Patch =
        serde_json::from_value(json!(outcome.patch)).expect("a JSON Patch");
    json_patch::patch(&mut stored, &patch).expect("the patch applies");
    (outcome, stored)
}

fn markers(object: &Value) -> Vec<String> {
    ["labels", "annotations"]
        .iter()
        .flat_map(|m| object["metadata"][m].as_object().into_iter().flatten())
        .map(|(k, _)| k.clone())
        .filter(|k| k.starts_with("restage-gate.io/"))
        .collect()
}

#[test]
fn a_release_of_a_workload_held_by_v0_1_0_restores_the_control_it_remembered_and_clears_every_marker(
) {
    for (kind, remembered, control) in REMEMBERED {
        let held = held_by_v0_1_0(kind);
        assert_eq!(held["metadata"]["labels"][HELD_LABEL], "true", "{kind}");
        let original: Value = serde_json::from_str(
            held["metadata"]["annotations"][remembered]
                .as_str()
                .unwrap_or_else(|| panic!("{kind}: {remembered}")),
        )
        .expect("the remembered control is JSON");

        let mut release = held.clone();
        release["metadata"]["annotations"][RELEASE] = json!("now");
        let (_, stored) = evaluate(&held, &release);

        assert_eq!(
            stored.pointer(control),
            Some(&original),
            "{kind}: {control}"
        );
        assert_eq!(markers(&stored), Vec::<String>::new(), "{kind}");
        // Nothing else changes: the request with the control put back and the markers taken
        // off is what is stored.
        let mut expected = release.clone();
        *expected.pointer_mut(control).expect("control") = original;
        for m in ["labels", "annotations"] {
            if let Some(map) = expected["metadata"][m].as_object_mut() {
                map.retain(|k, _| !k.starts_with("restage-gate.io/"));
            }
        }
        assert_eq!(stored, expected, "{kind}");
    }
}

#[test]
fn a_bind_into_a_workload_held_by_v0_1_0_stays_held_with_both_bindings_pending() {
    for (kind, remembered, control) in REMEMBERED {
        let held = held_by_v0_1_0(kind);
        let mut bound = held.clone();
        project(&mut bound, &cache_binding());
        let (_, stored) = evaluate(&held, &bound);

        assert_eq!(
            stored.pointer(control),
            held.pointer(control),
            "{kind}: still held"
        );
        assert_eq!(stored["metadata"]["labels"][HELD_LABEL], "true", "{kind}");
        let annotations = &stored["metadata"]["annotations"];
        assert_eq!(
            annotations[remembered], held["metadata"]["annotations"][remembered],
            "{kind}"
        );
        assert_eq!(
            annotations[HELD_SINCE], held["metadata"]["annotations"][HELD_SINCE],
            "{kind}"
        );
        let pending = annotations[PENDING].as_str().unwrap_or_default();
        assert!(
            pending.contains("+orders-db") && pending.contains("+cache"),
            "{kind}: pending is {pending:?}"
        );
    }
}
