//! `validate` over whole UPDATE requests built from Korifi v0.14 objects: the writes of
//! Korifi's statefulset-runner and what else is Korifi's StatefulSet's own, against the
//! decision table (docs/design.md §4), asserting the decision and, for every mutation, the
//! exact set of JSON paths it changes; then what a hold, a release and a refusal write. The
//! rows every kind follows are in `kinds.rs`.

use serde_json::{json, Value};

use restage_gate_testkit::projector::{project, project_vmware, unproject, Binding};

use super::{
    annotation, bound, changed_paths, check, fixture, held, hold_paths, in_rollout, kind_of,
    orders_db, restarted, rolling_deploy, runner_write, unbound, update, upsi, window_open, with,
    Expect, Request, EARLIER, NOW,
};
use restage_gate::evaluate;
use restage_gate::markers::{self, HELD_LABEL, HELD_SINCE_ANNOTATION, PENDING_ANNOTATION};
use restage_gate::workload::ORIGINAL_STRATEGY_ANNOTATION;

const UPSI: &str = "d41d8cd9-8f00-4b20-9e80-0998ecf8427e";

fn hold() -> Vec<String> {
    hold_paths(kind_of(&unbound()))
}

/// The runner writes its whole desired StatefulSet on every reconcile (no markers, no
/// projection, the API default strategy), whether a binding, a deploy or nothing changed; the
/// user may keep a strategy of their own, and a request may carry a status.
#[test]
fn korifi_runner_writes_follow_the_decision_table() {
    use Expect::*;
    let both = || with(bound(), |s| project(s, &orders_db()));
    let on_delete = |s: Value| {
        with(s, |s| {
            s["spec"]["updateStrategy"] = json!({"type": "OnDelete"})
        })
    };
    let cases: Vec<(&str, Request, Expect)> = vec![
        (
            "runner patch while held",
            update(held(both(), "+x"), runner_write(&held(both(), "+x"))),
            Mutated("held", hold()),
        ),
        (
            "runner patch while not held",
            update(bound(), runner_write(&bound())),
            Plain,
        ),
        (
            "rolling deploy by the runner while held",
            update(
                held(bound(), "+x"),
                with(runner_write(&bound()), rolling_deploy),
            ),
            Noted("released"),
        ),
        (
            "wipe while held in a window",
            update(held(bound(), "+x"), runner_write(&bound())).settings(window_open()),
            Noted("released"),
        ),
        (
            "reject mode runner wipe",
            update(bound(), runner_write(&bound())).settings(json!({"mode": "reject"})),
            Plain,
        ),
        // Only the stored object says whether a rollout is in progress; the request's status is
        // written back untouched (a dropped or re-emitted status would show in the patch).
        (
            "bind with a rolling status in the request",
            update(
                unbound(),
                with(bound(), |s| s["status"] = in_rollout()["status"].clone()),
            ),
            Mutated("held", hold()),
        ),
        (
            "bind with the user's own OnDelete",
            update(on_delete(unbound()), on_delete(bound())),
            Plain,
        ),
    ];
    for (name, request, expect) in cases {
        check(name, &request, expect);
    }
}

#[test]
fn first_bind_is_held_with_every_marker() {
    let request = update(unbound(), bound());
    let r = check("first bind", &request, Expect::Mutated("held", hold()));
    let sts = r.mutated_object.expect("mutated");
    assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    assert_eq!(sts["metadata"]["labels"][HELD_LABEL], "true");
    let original: Value = serde_json::from_str(
        annotation(&sts, ORIGINAL_STRATEGY_ANNOTATION).expect("original strategy"),
    )
    .expect("JSON");
    assert_eq!(original, bound()["spec"]["updateStrategy"]);
    assert_eq!(
        annotation(&sts, HELD_SINCE_ANNOTATION),
        Some("2026-12-02T16:51:06Z")
    );
    assert_eq!(
        annotation(&sts, PENDING_ANNOTATION),
        Some(&*format!("+{UPSI}"))
    );
    assert_eq!(
        sts["spec"]["template"],
        bound()["spec"]["template"],
        "template let through"
    );
    let audit = r.audit_annotations.expect("audit");
    assert_eq!(audit["pending"], format!("+{UPSI}"));
}

#[test]
fn unbind_is_held_and_the_removed_volume_is_not_kept() {
    let unbind = with(bound(), |s| unproject(s, &upsi().uid, true));
    let r = update(bound(), unbind.clone()).run();
    let sts = r.mutated_object.expect("mutated");
    assert_eq!(
        annotation(&sts, PENDING_ANNOTATION),
        Some(&*format!("-{UPSI}"))
    );
    assert_eq!(sts["spec"]["template"], unbind["spec"]["template"]);
    assert!(
        sts.pointer("/spec/template/spec/volumes").is_none(),
        "no volume mounts the deleted secret"
    );
    let env = sts["spec"]["template"]["spec"]["containers"][0]["env"].to_string();
    assert!(
        env.contains("SERVICE_BINDING_ROOT"),
        "unbinding never removes the root"
    );
}

#[test]
fn second_bind_while_held_refreshes_pending_and_keeps_the_rest() {
    let old = held(bound(), &format!("+{UPSI}"));
    let r = update(old.clone(), with(old.clone(), |s| project(s, &orders_db()))).run();
    let sts = r.mutated_object.expect("mutated");
    assert_eq!(
        annotation(&sts, PENDING_ANNOTATION),
        Some(&*format!("+{UPSI} +orders-db"))
    );
    assert_eq!(annotation(&sts, HELD_SINCE_ANNOTATION), Some(EARLIER));
    assert_eq!(
        annotation(&sts, ORIGINAL_STRATEGY_ANNOTATION),
        annotation(&old, ORIGINAL_STRATEGY_ANNOTATION)
    );
}

#[test]
fn runner_patch_while_held_reapplies_the_old_markers_unchanged() {
    let old = held(bound(), &format!("+{UPSI}"));
    let r = update(old.clone(), runner_write(&old)).run();
    let sts = r.mutated_object.expect("mutated");
    assert_eq!(sts["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    assert_eq!(
        sts["metadata"]["labels"], old["metadata"]["labels"],
        "label re-applied"
    );
    for key in [
        ORIGINAL_STRATEGY_ANNOTATION,
        HELD_SINCE_ANNOTATION,
        PENDING_ANNOTATION,
    ] {
        assert_eq!(annotation(&sts, key), annotation(&old, key), "{key}");
    }
}

#[test]
fn strategy_changed_by_a_request_while_held_is_the_one_restored() {
    let custom =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "partition": 0}});
    let old = held(bound(), "+x");
    let request = with(old.clone(), |s| {
        s["spec"]["updateStrategy"] = custom.clone()
    });
    let kept = update(old.clone(), request)
        .run()
        .mutated_object
        .expect("mutated");
    assert_eq!(kept["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    let remembered = annotation(&kept, ORIGINAL_STRATEGY_ANNOTATION).expect("annotation");
    assert_eq!(
        serde_json::from_str::<Value>(remembered).expect("JSON"),
        custom
    );

    let released = update(kept.clone(), with(kept, restarted)).run();
    let sts = released.mutated_object.expect("mutated");
    assert_eq!(sts["spec"]["updateStrategy"], custom);
}

#[test]
fn release_restores_the_original_strategy_and_removes_the_markers() {
    let original = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}});
    let r = update(unbound(), bound()).run();
    let old = r.mutated_object.expect("held");
    let deploy = with(old.clone(), rolling_deploy);
    let r = update(old, deploy.clone()).run();
    let sts = r.mutated_object.expect("released");
    assert_eq!(sts["spec"]["updateStrategy"], original);
    assert!(!markers::is_held(&sts));
    let markers = markers::read(&sts, ORIGINAL_STRATEGY_ANNOTATION);
    assert!(
        markers.remembered.is_none() && markers.held_since.is_none() && markers.pending.is_none()
    );
    let audit = r.audit_annotations.expect("audit");
    assert_eq!(audit["released"], format!("+{UPSI}"));
    assert_eq!(sts["spec"]["template"], deploy["spec"]["template"]);
}

#[test]
fn projection_with_type_provider_and_env_mappings_is_held() {
    let mut binding = orders_db();
    binding.type_ = Some("postgresql".into());
    binding.provider = Some("bitnami".into());
    binding.env = vec![
        ("DATABASE_URL".into(), "uri".into()),
        ("DB_KIND".into(), "type".into()),
    ];
    let new = with(unbound(), |s| project(s, &binding));
    let env = new["spec"]["template"]["spec"]["containers"][0]["env"].to_string();
    assert!(env.contains("DATABASE_URL") && env.contains("projector.servicebinding.io/type-"));
    let r = check(
        "mapped projection",
        &update(unbound(), new),
        Expect::Mutated("held", hold()),
    );
    let sts = r.mutated_object.expect("mutated");
    assert_eq!(annotation(&sts, PENDING_ANNOTATION), Some("+orders-db"));
}

#[test]
fn legacy_vmware_projection_is_held() {
    let binding = Binding::new("", "legacy-db", "legacy-db-secret");
    let new = with(unbound(), |s| {
        project_vmware(s, "5f1e2a8b3d4f709e213a4b5c6d7e8f0a1b2c3d4e", &binding)
    });
    let r = check(
        "legacy projection",
        &update(unbound(), new),
        Expect::Mutated("held", hold()),
    );
    let sts = r.mutated_object.expect("mutated");
    assert_eq!(annotation(&sts, PENDING_ANNOTATION), Some("+legacy-db"));
}

#[test]
fn reject_mode_names_the_workload_the_binding_and_the_ways_out() {
    let request = update(unbound(), bound()).settings(json!({"mode": "reject",
        "maintenanceWindows": [{"days": ["Sat", "Sun"], "start": "02:00", "end": "04:00"}]}));
    let r = check("reject", &request, Expect::Rejected);
    // The workload is named as its own metadata has it, not only as the request does.
    let mut anonymous = request.payload();
    anonymous["request"]["name"] = json!("");
    anonymous["request"]["namespace"] = json!("");
    let bytes = serde_json::to_vec(&anonymous).expect("serialisable");
    assert_eq!(evaluate(&bytes, NOW).message, r.message);
    assert_eq!(
        r.message.as_deref(),
        Some(concat!(
            "restage-gate refused an update of StatefulSet 5c6f1e2a-8b3d-4f70-9e21-3a4b5c6d7e8f/",
            "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a-5c6-cf46a6bfb1 (Cloud Foundry app guid ",
            "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a): its only pod-template change is service binding ",
            "+d41d8cd9-8f00-4b20-9e80-0998ecf8427e, which would restart every pod (mode: reject). ",
            "To apply it now, restart or restage the app (cf restart / cf restage), or run ",
            "`kubectl rollout restart statefulset/0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a-5c6-cf46a6bfb1 ",
            "-n 5c6f1e2a-8b3d-4f70-9e21-3a4b5c6d7e8f`, or wait for a maintenance window ",
            "(Sat,Sun 02:00-04:00 UTC)."
        ))
    );
}

#[test]
fn projector_model_reproduces_the_reference_objects() {
    let projected = with(unbound(), |s| project(s, &upsi()));
    assert_eq!(projected["spec"], bound()["spec"]);
    let rebound = with(bound(), |s| {
        unproject(s, &upsi().uid, true);
        project(s, &orders_db());
    });
    let reference = fixture("statefulset-2-rebound-managed.json");
    assert_eq!(rebound["spec"], reference["spec"]);
    assert_eq!(
        rebound["metadata"]["annotations"],
        reference["metadata"]["annotations"]
    );
}

#[test]
fn unreadable_payloads_are_accepted_with_a_warning() {
    for payload in [&b"not json"[..], b"{}", b"[]", br#"{"request": 3}"#] {
        let r = evaluate(payload, NOW);
        assert!(r.accepted);
        assert!(r.mutated_object.is_none());
        assert_eq!(r.warnings.map(|w| w.len()), Some(1));
    }
    // A bind whose bytes are not UTF-8 where the policy never reads (the container image):
    // JSON text is UTF-8, so the request is unreadable, not held.
    let text = serde_json::to_string(&update(unbound(), bound()).payload()).expect("JSON");
    let mut bytes = text.into_bytes();
    let image = bytes
        .windows(7)
        .position(|w| w == b"\"image\"")
        .expect("an image");
    bytes[image + 9] = 0xff;
    let r = evaluate(&bytes, NOW);
    assert!(r.accepted && r.mutated_object.is_none());
    assert_eq!(r.warnings.map(|w| w.len()), Some(1));
}

/// Found by fuzzing: without correctly rounded float parsing, a float anywhere in the object
/// came back slightly different in the mutated object.
#[test]
fn floats_elsewhere_in_the_object_survive_a_mutation_exactly() {
    let float = serde_json::from_str::<Value>("8.784947035269492e+223").expect("float");
    let new = with(bound(), |s| s["spec"]["futureRatio"] = float.clone());
    let old = with(unbound(), |s| s["spec"]["futureRatio"] = float.clone());
    let r = update(old, new.clone()).run();
    let sts = r.mutated_object.expect("held");
    assert_eq!(sts["spec"]["futureRatio"], float);
    assert_eq!(changed_paths(&new, &sts).len(), hold().len());
}

#[test]
fn null_request_strings_read_as_empty() {
    let mut payload = update(unbound(), bound()).payload();
    payload["request"]["subResource"] = Value::Null;
    payload["request"]["namespace"] = Value::Null;
    let r = evaluate(&serde_json::to_vec(&payload).expect("serialisable"), NOW);
    assert!(
        r.mutated_object.is_some(),
        "held, not skipped as unreadable"
    );
}
