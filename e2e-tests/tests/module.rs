//! The compiled module, in the runtime Kubewarden uses: every row of the decision table
//! (docs/design.md §4), every platform write, the exact shapes of projections (§2), what a
//! release restores, the release annotation, and each kind (§10), asserting allowed/denied, the
//! decoded JSON patch, the warning and the audit annotations exactly; and `validate_settings`
//! of the module.

use std::collections::BTreeMap;

use restage_gate::markers::{HELD_LABEL, HELD_SINCE_ANNOTATION, PENDING_ANNOTATION};
use restage_gate_e2e::admission::Outcome;
use restage_gate_e2e::host::policy_under_test;
use restage_gate_testkit::admission::{request, validation_request};
use restage_gate_testkit::edit::with;
use restage_gate_testkit::fixtures::daemonset;
use restage_gate_testkit::hold::{
    annotation_path, default_control, held, label_path, remembered_annotation,
};
use restage_gate_testkit::korifi::{desired, orders_db, runner_write, unbound, upsi};
use restage_gate_testkit::kubectl::rollout_restart;
use restage_gate_testkit::projector::{project, unproject, Binding};
use serde_json::{json, Value};

const SINCE: &str = "2026-12-01T09:00:00Z";
/// Stands for the module's own clock reading in expected patches.
const NOW: &str = "<now>";
/// A window open all day, every day, so the module's real clock is always inside it.
const ALWAYS: &str = "maintenance window Mon,Tue,Wed,Thu,Fri,Sat,Sun 00:00-00:00 UTC";

fn bound() -> Value {
    with(unbound(), |s| project(s, &upsi()))
}

fn both() -> Value {
    with(bound(), |s| project(s, &orders_db()))
}

fn upsi_name() -> String {
    upsi().name
}

fn evaluate(settings: &Value, operation: &str, old: &Value, new: &Value) -> Outcome {
    let request = request(operation, old, new);
    let response = policy_under_test()
        .validate(&validation_request(settings, &request))
        .expect("validate answers");
    Outcome::new(&request, &response)
}

/// The patch (sorted by path) and the warnings, with the module's own clock reading (a
/// `held-since` it wrote now) replaced by `<now>`.
fn normalised(outcome: &Outcome) -> (Vec<Value>, Vec<String>) {
    let mut ops: Vec<Value> = outcome.patch.clone();
    let clock = ops
        .iter()
        .find(|op| op["path"] == annotation_path(HELD_SINCE_ANNOTATION))
        .and_then(|op| op["value"].as_str())
        .filter(|v| *v != SINCE && v.len() == 20 && v.starts_with("20") && v.ends_with('Z'))
        .map(str::to_string);
    let Some(clock) = clock else {
        ops.sort_by_key(|op| op["path"].as_str().unwrap_or_default().to_string());
        return (ops, outcome.warnings.clone());
    };
    for op in &mut ops {
        if op["value"] == json!(clock) {
            op["value"] = json!(NOW);
        }
    }
    ops.sort_by_key(|op| op["path"].as_str().unwrap_or_default().to_string());
    let warnings = outcome
        .warnings
        .iter()
        .map(|w| w.replace(&clock, NOW))
        .collect();
    (ops, warnings)
}

/// The kind of a fixture object.
fn kind_of(object: &Value) -> &'static str {
    match object["kind"].as_str() {
        Some("DaemonSet") => "DaemonSet",
        Some("Deployment") => "Deployment",
        _ => "StatefulSet",
    }
}

/// The control each fixture workload runs with, as the JSON text a hold remembers.
fn fixture_control(kind: &str) -> String {
    match kind {
        "Deployment" => json!(false).to_string(),
        "DaemonSet" => daemonset()["spec"]["updateStrategy"].to_string(),
        _ => unbound()["spec"]["updateStrategy"].to_string(),
    }
}

/// The ops that write (`add`) the label and annotations of a hold.
fn add_markers(kind: &str, remembered: &str, since: &str, pending: &str) -> Vec<Value> {
    vec![
        json!({"op": "add", "path": annotation_path(HELD_SINCE_ANNOTATION), "value": since}),
        json!({"op": "add", "path": annotation_path(remembered_annotation(kind)), "value": remembered}),
        json!({"op": "add", "path": annotation_path(PENDING_ANNOTATION), "value": pending}),
        json!({"op": "add", "path": label_path(HELD_LABEL), "value": "true"}),
    ]
}

/// The ops that remove the label and annotations of a hold.
fn remove_markers(kind: &str) -> Vec<Value> {
    [
        annotation_path(HELD_SINCE_ANNOTATION),
        annotation_path(remembered_annotation(kind)),
        annotation_path(PENDING_ANNOTATION),
        label_path(HELD_LABEL),
    ]
    .into_iter()
    .map(|path| json!({"op": "remove", "path": path}))
    .collect()
}

/// From the fixture's control to the held one.
fn hold_control(kind: &str) -> Vec<Value> {
    match kind {
        "Deployment" => vec![json!({"op": "add", "path": "/spec/paused", "value": true})],
        _ => vec![
            json!({"op": "remove", "path": "/spec/updateStrategy/rollingUpdate"}),
            json!({"op": "replace", "path": "/spec/updateStrategy/type", "value": "OnDelete"}),
        ],
    }
}

/// From the held control back to the API default (which every fixture runs with).
fn restore_default(kind: &str) -> Vec<Value> {
    match kind {
        "Deployment" => {
            vec![json!({"op": "replace", "path": "/spec/paused", "value": false})]
        }
        _ => vec![
            json!({"op": "add", "path": "/spec/updateStrategy/rollingUpdate", "value": default_control(kind)["rollingUpdate"]}),
            json!({"op": "replace", "path": "/spec/updateStrategy/type", "value": "RollingUpdate"}),
        ],
    }
}

/// A first hold of a fixture workload that runs with its usual control.
fn hold_patch(kind: &str, since: &str, pending: &str) -> Vec<Value> {
    let mut ops = add_markers(kind, &fixture_control(kind), since, pending);
    ops.extend(hold_control(kind));
    ops
}

fn release_patch(kind: &str) -> Vec<Value> {
    let mut ops = remove_markers(kind);
    ops.extend(restore_default(kind));
    ops
}

fn audit(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The command that applies held changes now, for a fixture workload.
fn apply_now(object: &Value) -> String {
    let (name, namespace) = (
        object["metadata"]["name"].as_str().unwrap_or_default(),
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
    );
    match kind_of(object) {
        "Deployment" => format!("kubectl rollout resume deployment/{name} -n {namespace}"),
        kind => format!(
            "kubectl rollout restart {}/{name} -n {namespace}",
            kind.to_lowercase()
        ),
    }
}

struct Expect {
    allowed: bool,
    patch: Vec<Value>,
    warning: Option<String>,
    audit: BTreeMap<String, String>,
    message: Option<String>,
}

fn plain() -> Expect {
    Expect {
        allowed: true,
        patch: vec![],
        warning: None,
        audit: BTreeMap::new(),
        message: None,
    }
}

/// A first hold of `object`, with the patch given.
fn held_first(object: &Value, patch: Vec<Value>, pending: &str) -> Expect {
    let kind = kind_of(object);
    Expect {
        allowed: true,
        patch,
        warning: Some(format!(
            "restage-gate: {kind} rollout held; {pending} applies at the next restart or restage"
        )),
        audit: audit(&[
            ("decision", "held"),
            ("pending", pending),
            ("apply-now", &apply_now(object)),
        ]),
        message: None,
    }
}

/// A hold of a fixture workload that ran with its usual control.
fn first_hold(object: &Value, pending: &str) -> Expect {
    held_first(object, hold_patch(kind_of(object), NOW, pending), pending)
}

/// A hold kept since SINCE (or `since`), with the patch given.
fn kept_since(object: &Value, since: &str, patch: Vec<Value>, pending: &str) -> Expect {
    let kind = kind_of(object);
    Expect {
        allowed: true,
        patch,
        warning: Some(format!(
            "restage-gate: {kind} rollout held since {since}; pending: {pending}"
        )),
        audit: audit(&[
            ("decision", "held"),
            ("pending", pending),
            ("apply-now", &apply_now(object)),
        ]),
        message: None,
    }
}

fn kept(object: &Value, patch: Vec<Value>, pending: &str) -> Expect {
    kept_since(object, SINCE, patch, pending)
}

fn released(object: &Value, patch: Vec<Value>, because: &str, pending: &str) -> Expect {
    let kind = kind_of(object);
    Expect {
        allowed: true,
        patch,
        warning: Some(format!(
            "restage-gate: {kind} rollout released ({because}); now rolling out: {pending}"
        )),
        audit: audit(&[
            ("decision", "released"),
            ("released", pending),
            ("reason", because),
        ]),
        message: None,
    }
}

/// Refused in reject mode: the message names the kind, the workload, the app guid when there is
/// one, the bindings and the ways to apply the change now.
fn rejected(object: &Value, bindings: &str) -> Expect {
    let kind = kind_of(object);
    let (name, namespace) = (
        object["metadata"]["name"].as_str().unwrap_or_default(),
        object["metadata"]["namespace"].as_str().unwrap_or_default(),
    );
    let app = object["metadata"]["labels"]["korifi.cloudfoundry.org/app-guid"]
        .as_str()
        .map(|guid| format!(" (Cloud Foundry app guid {guid})"))
        .unwrap_or_default();
    Expect {
        allowed: false,
        patch: vec![],
        warning: Some(format!("restage-gate: refused binding change {bindings}")),
        audit: audit(&[("decision", "rejected"), ("bindings", bindings)]),
        message: Some(format!(
            "restage-gate refused an update of {kind} {namespace}/{name}{app}: its only pod-template change is service binding {bindings}, which would restart every pod (mode: reject). To apply it now, restart or restage the app (cf restart / cf restage), or run `kubectl rollout restart {}/{name} -n {namespace}`.",
            kind.to_lowercase()
        )),
    }
}

fn cut(text: String) -> String {
    if text.chars().count() <= restage_gate::WARNING_LIMIT {
        return text;
    }
    text.chars()
        .take(restage_gate::WARNING_LIMIT - 1)
        .collect::<String>()
        + "…"
}

/// (name, settings, operation, oldObject, object, expected)
type Case<N = &'static str> = (N, Value, &'static str, Value, Value, Expect);

fn check<N: std::fmt::Display>(cases: Vec<Case<N>>) {
    for (name, settings, operation, old, new, want) in cases {
        let got = evaluate(&settings, operation, &old, &new);
        assert_eq!(got.allowed, want.allowed, "{name}: allowed");
        let (patch, warnings) = normalised(&got);
        let mut want_patch = want.patch.clone();
        want_patch.sort_by_key(|op| op["path"].as_str().unwrap_or_default().to_string());
        assert_eq!(patch, want_patch, "{name}: patch");
        assert_eq!(
            warnings,
            want.warning.map(cut).into_iter().collect::<Vec<_>>(),
            "{name}: warnings"
        );
        assert_eq!(got.audit, want.audit, "{name}: audit annotations");
        assert_eq!(got.message, want.message, "{name}: message");
    }
}

fn defer() -> Value {
    json!({})
}

fn reject() -> Value {
    json!({"mode": "reject"})
}

fn open_window() -> Value {
    json!({"maintenanceWindows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "start": "00:00", "end": "00:00"}]})
}

fn scaled(object: Value, replicas: u32) -> Value {
    with(object, |s| s["spec"]["replicas"] = json!(replicas))
}

fn restarted(object: Value) -> Value {
    with(object, |s| rollout_restart(s, "2026-12-02T10:00:00Z"))
}

fn on_delete(object: Value) -> Value {
    with(object, |s| {
        s["spec"]["updateStrategy"] = json!({"type": "OnDelete"})
    })
}

#[test]
fn module_follows_the_decision_table() {
    let sts = unbound();
    let u = format!("+{}", upsi_name());
    let uo = format!("{u} +orders-db");
    let held_u = || held(bound(), &u, SINCE);
    let held_uo = || held(both(), &uo, SINCE);
    let in_rollout = with(unbound(), |s| {
        s["spec"]["replicas"] = json!(3);
        s["status"] = json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1,
            "currentRevision": "r1", "updateRevision": "r2"});
    });
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
    let pending_patch = |pending: &str| {
        vec![
            json!({"op": "replace", "path": annotation_path(PENDING_ANNOTATION), "value": pending}),
        ]
    };

    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("first bind", defer(), "UPDATE", unbound(), bound(), first_hold(&sts, &u)),
        ("unbind", defer(), "UPDATE", bound(), with(bound(), |s| unproject(s, &upsi().uid, true)), first_hold(&sts, &format!("-{}", upsi_name()))),
        ("second bind while held", defer(), "UPDATE", held_u(), with(held_u(), |s| project(s, &orders_db())), kept(&sts, pending_patch(&uo), &uo)),
        ("runner patch while held", defer(), "UPDATE", held_uo(), runner_write(&held_uo(), &desired(0, 1)), kept(&sts, hold_patch("StatefulSet", SINCE, &uo), &uo)),
        ("runner patch while not held", defer(), "UPDATE", both(), runner_write(&both(), &desired(0, 1)), plain()),
        ("no change while held", defer(), "UPDATE", held_u(), held_u(), kept(&sts, vec![], &u)),
        ("scale while held", defer(), "UPDATE", held_u(), scaled(held_u(), 3), kept(&sts, vec![], &u)),
        ("scale", defer(), "UPDATE", bound(), scaled(bound(), 3), plain()),
        ("no change", defer(), "UPDATE", bound(), bound(), plain()),
        ("rolling deploy while held", defer(), "UPDATE", held_uo(), runner_write(&held_uo(), &desired(1, 1)), released(&sts, vec![], "restart or restage", &uo)),
        ("rollout restart while held", defer(), "UPDATE", held_u(), restarted(held_u()), released(&sts, release_patch("StatefulSet"), "restart or restage", &u)),
        ("unknown pod-spec field while held", defer(), "UPDATE", held_u(), unknown_field(held_u()), released(&sts, release_patch("StatefulSet"), "restart or restage", &u)),
        ("unknown pod-spec field", defer(), "UPDATE", unbound(), unknown_field(bound()), plain()),
        ("rollout restart", defer(), "UPDATE", bound(), restarted(bound()), plain()),
        ("bind during a rollout", defer(), "UPDATE", in_rollout.clone(), scaled(bound(), 3), plain()),
        ("bind with the user's own OnDelete", defer(), "UPDATE", on_delete(unbound()), on_delete(bound()), plain()),
        ("projection with type, provider and env mappings", defer(), "UPDATE", unbound(), mapped, first_hold(&sts, "+orders-db")),
        ("bind in a maintenance window", open_window(), "UPDATE", unbound(), bound(), plain()),
        ("held, window open", open_window(), "UPDATE", held_u(), held_u(), released(&sts, release_patch("StatefulSet"), ALWAYS, &u)),
        ("wipe while held, window open", open_window(), "UPDATE", held_u(), runner_write(&held_u(), &desired(0, 1)), released(&sts, vec![], ALWAYS, &u)),
        ("reject mode bind", reject(), "UPDATE", unbound(), bound(), rejected(&sts, &u)),
        ("reject mode runner wipe", reject(), "UPDATE", bound(), runner_write(&bound(), &desired(0, 1)), plain()),
        ("reject mode rolling deploy", reject(), "UPDATE", bound(), runner_write(&bound(), &desired(1, 1)), plain()),
        ("create", defer(), "CREATE", Value::Null, bound(), plain()),
        ("delete", defer(), "DELETE", bound(), Value::Null, plain()),
        ("object being deleted", defer(), "UPDATE", unbound(), with(bound(), |s| s["metadata"]["deletionTimestamp"] = json!("2026-12-02T10:00:00Z")), plain()),
        ("malformed object", defer(), "UPDATE", unbound(), json!("garbage"), Expect {
            allowed: true, patch: vec![], message: None,
            warning: Some("restage-gate: accepted unchanged, request not readable: the request has no object or oldObject".into()),
            audit: audit(&[("decision", "unreadable"), ("reason", "the request has no object or oldObject")]),
        }),
    ];
    check(cases);
}

#[test]
fn subresources_and_other_kinds_are_accepted_unchanged() {
    for (field, value) in [("subResource", "status"), ("subResource", "scale")] {
        let mut request = request("UPDATE", &unbound(), &bound());
        request[field] = json!(value);
        let response = policy_under_test()
            .validate(&validation_request(&defer(), &request))
            .expect("validate");
        assert_eq!(
            Outcome::new(&request, &response),
            Outcome::new(&request, &json!({"accepted": true})),
            "{value}"
        );
    }
    for (api_version, kind) in [
        ("apps/v1", "ReplicaSet"),
        ("v1", "ReplicationController"),
        ("batch/v1", "CronJob"),
        ("batch/v1", "Job"),
    ] {
        let typed = |s: &mut Value| {
            s["apiVersion"] = json!(api_version);
            s["kind"] = json!(kind);
        };
        let (old, new) = (with(unbound(), typed), with(bound(), typed));
        let request = request("UPDATE", &old, &new);
        let response = policy_under_test()
            .validate(&validation_request(&defer(), &request))
            .expect("validate");
        assert_eq!(response["accepted"], true, "{kind}");
        assert!(
            response["mutated_object"].is_null() && response["warnings"].is_null(),
            "{kind}"
        );
    }
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
