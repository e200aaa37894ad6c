//! The compiled module, in the runtime Kubewarden uses: every row of DESIGN.md §3 and every
//! platform write, asserting allowed/denied, the decoded JSON patch, the warning and the audit
//! annotations exactly; and `validate_settings` of the module.

use std::collections::BTreeMap;

use restage_gate_e2e::admission::statefulset_request;
use restage_gate_e2e::host::policy_under_test;
use restage_gate_e2e::korifi::{
    desired, held, orders_db, rollout_restart, runner_write, unbound, upsi,
};
use restage_gate_e2e::projector::{project, unproject, Binding};
use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::guest::Guest;
use serde_json::{json, Value};

const SINCE: &str = "2026-12-01T09:00:00Z";
const DEFAULT_STRATEGY: &str = r#"{"rollingUpdate":{"partition":0},"type":"RollingUpdate"}"#;
/// Stands for the module's own clock reading in expected patches.
const NOW: &str = "<now>";

fn with(mut sts: Value, edit: impl FnOnce(&mut Value)) -> Value {
    edit(&mut sts);
    sts
}

fn bound() -> Value {
    with(unbound(), |s| project(s, &upsi()))
}

fn both() -> Value {
    with(bound(), |s| project(s, &orders_db()))
}

fn upsi_name() -> String {
    upsi().name
}

fn evaluate(settings: Value, operation: &str, old: &Value, new: &Value) -> Outcome {
    let request = statefulset_request(operation, old, new);
    let response = policy_under_test()
        .validate(&json!({"settings": settings, "request": request}))
        .expect("validate answers");
    Outcome::new(&request, &response)
}

/// The patch with the module's `held-since` clock reading replaced by `<now>`, sorted by path.
fn patch_of(outcome: &Outcome) -> Vec<Value> {
    let mut ops: Vec<Value> = outcome.patch.clone();
    for op in &mut ops {
        if op["path"] == "/metadata/annotations/restage-gate.io~1held-since" {
            let value = op["value"].as_str().unwrap_or_default();
            if value != SINCE
                && value.len() == 20
                && value.starts_with("20")
                && value.ends_with('Z')
            {
                op["value"] = json!(NOW);
            }
        }
    }
    ops.sort_by_key(|op| op["path"].as_str().unwrap_or_default().to_string());
    ops
}

fn hold_patch(original: &str, since: &str, pending: &str) -> Vec<Value> {
    let mut ops = marker_patch(original, since, pending);
    ops.push(json!({"op": "remove", "path": "/spec/updateStrategy/rollingUpdate"}));
    ops.push(json!({"op": "replace", "path": "/spec/updateStrategy/type", "value": "OnDelete"}));
    ops
}

fn marker_patch(original: &str, since: &str, pending: &str) -> Vec<Value> {
    let a = "/metadata/annotations/restage-gate.io~1";
    vec![
        json!({"op": "add", "path": format!("{a}held-since"), "value": since}),
        json!({"op": "add", "path": format!("{a}original-update-strategy"), "value": original}),
        json!({"op": "add", "path": format!("{a}pending"), "value": pending}),
        json!({"op": "add", "path": "/metadata/labels/restage-gate.io~1held", "value": "true"}),
    ]
}

fn release_patch() -> Vec<Value> {
    let a = "/metadata/annotations/restage-gate.io~1";
    vec![
        json!({"op": "remove", "path": format!("{a}held-since")}),
        json!({"op": "remove", "path": format!("{a}original-update-strategy")}),
        json!({"op": "remove", "path": format!("{a}pending")}),
        json!({"op": "remove", "path": "/metadata/labels/restage-gate.io~1held"}),
        json!({"op": "add", "path": "/spec/updateStrategy/rollingUpdate", "value": {"partition": 0}}),
        json!({"op": "replace", "path": "/spec/updateStrategy/type", "value": "RollingUpdate"}),
    ]
}

fn audit(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

struct Expect {
    allowed: bool,
    patch: Vec<Value>,
    warning: Option<String>,
    audit: BTreeMap<String, String>,
}

fn plain() -> Expect {
    Expect {
        allowed: true,
        patch: vec![],
        warning: None,
        audit: BTreeMap::new(),
    }
}

fn held_first(pending: &str) -> Expect {
    Expect {
        allowed: true,
        patch: hold_patch(DEFAULT_STRATEGY, NOW, pending),
        warning: Some(format!(
            "restage-gate: rollout held; {pending} applies at the next restart or restage"
        )),
        audit: audit(&[("decision", "held"), ("pending", pending)]),
    }
}

fn kept(patch: Vec<Value>, pending: &str) -> Expect {
    Expect {
        allowed: true,
        patch,
        warning: Some(format!(
            "restage-gate: rollout held since {SINCE}; pending: {pending}"
        )),
        audit: audit(&[("decision", "held"), ("pending", pending)]),
    }
}

fn released(patch: Vec<Value>, because: &str, pending: &str) -> Expect {
    Expect {
        allowed: true,
        patch,
        warning: Some(format!(
            "restage-gate: rollout released ({because}); now rolling out: {pending}"
        )),
        audit: audit(&[
            ("decision", "released"),
            ("released", pending),
            ("reason", because),
        ]),
    }
}

fn cut(text: String) -> String {
    if text.chars().count() <= 120 {
        return text;
    }
    text.chars().take(119).collect::<String>() + "…"
}

#[test]
fn module_follows_the_decision_table() {
    let u = format!("+{}", upsi_name());
    let uo = format!("{u} +orders-db");
    let defer = json!({});
    let reject = json!({"mode": "reject"});
    // a window open all day, every day, so the module's real clock is always inside it
    let open = json!({"maintenanceWindows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "start": "00:00", "end": "00:00"}]});
    let held_u = || held(bound(), &u, SINCE);
    let held_uo = || held(both(), &uo, SINCE);
    let in_rollout = with(unbound(), |s| {
        s["spec"]["replicas"] = json!(3);
        s["status"] = json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1,
            "currentRevision": "r1", "updateRevision": "r2"});
    });
    let on_delete = |s: Value| {
        with(s, |s| {
            s["spec"]["updateStrategy"] = json!({"type": "OnDelete"})
        })
    };
    let scaled = |s: Value| with(s, |s| s["spec"]["replicas"] = json!(3));
    let restarted = |s: Value| with(s, |s| rollout_restart(s, "2026-12-02T10:00:00Z"));
    let unknown_field = |s: Value| {
        with(s, |s| {
            s["spec"]["template"]["spec"]["futureField"] = json!({"on": true})
        })
    };
    let mapped = {
        let mut b: Binding = orders_db();
        b.type_ = Some("postgresql".into());
        b.provider = Some("bitnami".into());
        b.env = vec![
            ("DATABASE_URL".into(), "uri".into()),
            ("DB_KIND".into(), "type".into()),
        ];
        with(unbound(), |s| project(s, &b))
    };
    let legacy = with(unbound(), |s| {
        let v = "binding-5f1e2a8b3d4f709e213a4b5c6d7e8f0a1b2c3d4e";
        let t = &mut s["spec"]["template"];
        t["metadata"]["annotations"]["internal.bindings.labs.vmware.com/projection-5f1e2a8b"] =
            json!("legacy-db");
        t["spec"]["volumes"] = json!([{"name": v, "secret": {"secretName": "legacy-db"}}]);
        let c = &mut t["spec"]["containers"][0];
        c["volumeMounts"] =
            json!([{"name": v, "mountPath": "/bindings/legacy-db", "readOnly": true}]);
        c["env"]
            .as_array_mut()
            .expect("env")
            .push(json!({"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}));
    });
    let rejection = format!(
        "restage-gate refused an update of StatefulSet {ns}/{name} (Cloud Foundry app guid {guid}): its only pod-template change is service binding {u}, which would restart every pod (mode: reject). To apply it now, restart or restage the app (cf restart / cf restage), or run `kubectl rollout restart statefulset/{name} -n {ns}`.",
        ns = "5c6f1e2a-8b3d-4f70-9e21-3a4b5c6d7e8f",
        name = "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a-5c6-cf46a6bfb1",
        guid = "0f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
    );

    let cases: Vec<(&str, Value, &str, Value, Value, Expect)> = vec![
        ("first bind", defer.clone(), "UPDATE", unbound(), bound(), held_first(&u)),
        ("unbind", defer.clone(), "UPDATE", bound(), with(bound(), |s| unproject(s, &upsi().uid, true)), held_first(&format!("-{}", upsi_name()))),
        ("second bind while held", defer.clone(), "UPDATE", held_u(), with(held_u(), |s| project(s, &orders_db())),
            kept(vec![json!({"op": "replace", "path": "/metadata/annotations/restage-gate.io~1pending", "value": uo})], &uo)),
        ("runner patch while held", defer.clone(), "UPDATE", held_uo(), runner_write(&held_uo(), &desired(0, 1)),
            kept(hold_patch(DEFAULT_STRATEGY, SINCE, &uo), &uo)),
        ("runner patch while not held", defer.clone(), "UPDATE", both(), runner_write(&both(), &desired(0, 1)), plain()),
        ("no change while held", defer.clone(), "UPDATE", held_u(), held_u(), kept(vec![], &u)),
        ("scale while held", defer.clone(), "UPDATE", held_u(), scaled(held_u()), kept(vec![], &u)),
        ("scale", defer.clone(), "UPDATE", bound(), scaled(bound()), plain()),
        ("no change", defer.clone(), "UPDATE", bound(), bound(), plain()),
        ("rolling deploy while held", defer.clone(), "UPDATE", held_uo(), runner_write(&held_uo(), &desired(1, 1)),
            released(vec![], "restart or restage", &uo)),
        ("rollout restart while held", defer.clone(), "UPDATE", held_u(), restarted(held_u()),
            released(release_patch(), "restart or restage", &u)),
        ("unknown pod-spec field while held", defer.clone(), "UPDATE", held_u(), unknown_field(held_u()),
            released(release_patch(), "restart or restage", &u)),
        ("unknown pod-spec field", defer.clone(), "UPDATE", unbound(), unknown_field(bound()), plain()),
        ("rollout restart", defer.clone(), "UPDATE", bound(), restarted(bound()), plain()),
        ("bind during a rollout", defer.clone(), "UPDATE", in_rollout.clone(), scaled(bound()), plain()),
        ("bind with the user's own OnDelete", defer.clone(), "UPDATE", on_delete(unbound()), on_delete(bound()), plain()),
        ("projection with type, provider and env mappings", defer.clone(), "UPDATE", unbound(), mapped, held_first("+orders-db")),
        ("legacy VMware projection", defer.clone(), "UPDATE", unbound(), legacy, held_first("+legacy-db")),
        ("bind in a maintenance window", open.clone(), "UPDATE", unbound(), bound(), plain()),
        ("held, window open", open.clone(), "UPDATE", held_u(), held_u(),
            released(release_patch(), "maintenance window Mon,Tue,Wed,Thu,Fri,Sat,Sun 00:00-00:00 UTC", &u)),
        ("wipe while held, window open", open.clone(), "UPDATE", held_u(), runner_write(&held_u(), &desired(0, 1)),
            released(vec![], "maintenance window Mon,Tue,Wed,Thu,Fri,Sat,Sun 00:00-00:00 UTC", &u)),
        ("reject mode bind", reject.clone(), "UPDATE", unbound(), bound(), Expect {
            allowed: false, patch: vec![],
            warning: Some(format!("restage-gate: refused binding change {u}")),
            audit: audit(&[("decision", "rejected"), ("bindings", &u)]),
        }),
        ("reject mode runner wipe", reject.clone(), "UPDATE", bound(), runner_write(&bound(), &desired(0, 1)), plain()),
        ("reject mode rolling deploy", reject.clone(), "UPDATE", bound(), runner_write(&bound(), &desired(1, 1)), plain()),
        ("create", defer.clone(), "CREATE", Value::Null, bound(), plain()),
        ("delete", defer.clone(), "DELETE", bound(), Value::Null, plain()),
        ("object being deleted", defer.clone(), "UPDATE", unbound(),
            with(bound(), |s| s["metadata"]["deletionTimestamp"] = json!("2026-12-02T10:00:00Z")), plain()),
        ("malformed object", defer.clone(), "UPDATE", unbound(), json!("garbage"), Expect {
            allowed: true, patch: vec![],
            warning: Some("restage-gate: accepted unchanged, request not readable: the request has no object or oldObject".into()),
            audit: audit(&[("decision", "unreadable"), ("reason", "the request has no object or oldObject")]),
        }),
    ];
    for (name, settings, operation, old, new, want) in cases {
        let got = evaluate(settings, operation, &old, &new);
        assert_eq!(got.allowed, want.allowed, "{name}: allowed");
        let mut want_patch = want.patch.clone();
        want_patch.sort_by_key(|op| op["path"].as_str().unwrap_or_default().to_string());
        assert_eq!(patch_of(&got), want_patch, "{name}: patch");
        assert_eq!(
            got.warnings,
            want.warning.map(cut).into_iter().collect::<Vec<_>>(),
            "{name}: warnings"
        );
        assert_eq!(got.audit, want.audit, "{name}: audit annotations");
        if !want.allowed {
            assert_eq!(
                got.message.as_deref(),
                Some(rejection.as_str()),
                "{name}: message"
            );
        }
    }
}

#[test]
fn subresources_and_other_kinds_are_accepted_unchanged() {
    for (field, value) in [("subResource", "status"), ("subResource", "scale")] {
        let mut request = statefulset_request("UPDATE", &unbound(), &bound());
        request[field] = json!(value);
        let response = policy_under_test()
            .validate(&json!({"settings": {}, "request": request}))
            .expect("validate");
        assert_eq!(
            Outcome::new(&request, &response),
            Outcome::new(&request, &json!({"accepted": true})),
            "{value}"
        );
    }
    let mut request = statefulset_request("UPDATE", &unbound(), &bound());
    request["kind"] = json!({"group": "apps", "version": "v1", "kind": "DaemonSet"});
    let response = policy_under_test()
        .validate(&json!({"settings": {}, "request": request}))
        .expect("validate");
    assert_eq!(response["accepted"], true);
    assert!(response["mutated_object"].is_null() && response["warnings"].is_null());
}

#[test]
fn unreadable_payloads_are_accepted_not_errors() {
    for payload in [&b"not json"[..], b"{}", b"[1,2]"] {
        let out = policy_under_test()
            .call("validate", payload)
            .expect("no waPC error");
        let response: Value = serde_json::from_slice(&out).expect("JSON response");
        assert_eq!(
            response["accepted"],
            true,
            "{}",
            String::from_utf8_lossy(payload)
        );
        assert_eq!(response["warnings"].as_array().map(Vec::len), Some(1));
    }
}

#[test]
fn module_validates_settings_with_field_and_value() {
    let module = policy_under_test();
    let valid = [
        json!({}),
        json!({"mode": "reject"}),
        json!({"mode": "defer", "maintenanceWindows": [{"days": ["Sat"], "start": "22:00", "end": "00:00"}],
            "extraVolumePrefixes": ["acme-"], "extraAnnotationPrefixes": ["bindings.acme.example/"]}),
    ];
    for settings in valid {
        assert_eq!(module.validate_settings(&settings), Ok(None), "{settings}");
    }
    let invalid = [
        (json!({"mode": "later"}), r#"settings.mode: "later" is not a mode; use "defer" or "reject""#),
        (json!({"maintenanceWindow": []}), "settings.maintenanceWindow: unknown field; the settings fields are mode, maintenanceWindows, extraVolumePrefixes, extraAnnotationPrefixes"),
        (json!({"maintenanceWindows": [{"days": ["Caturday"], "start": "02:00", "end": "04:00"}]}), r#"settings.maintenanceWindows[0].days[0]: "Caturday" is not a day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun"#),
        (json!({"maintenanceWindows": [{"days": ["Sat"], "start": "25:00", "end": "04:00"}]}), r#"settings.maintenanceWindows[0].start: "25:00" is not a time of day; write "HH:MM" between "00:00" and "23:59" (UTC)"#),
        (json!({"extraVolumePrefixes": [""]}), r#"settings.extraVolumePrefixes[0]: "" is empty and would match everything; give a volume-name prefix such as "binding-""#),
    ];
    for (settings, message) in invalid {
        assert_eq!(
            module.validate_settings(&settings),
            Ok(Some(message.to_string())),
            "{settings}"
        );
    }
    let out = module
        .call("validate_settings", b"{not json")
        .expect("no waPC error");
    let response: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(response["valid"], false);
}

#[test]
fn module_speaks_protocol_v1() {
    assert_eq!(policy_under_test().protocol_version(), Ok(json!("v1")));
}
