//! The compiled module, in the runtime Kubewarden uses: every row of the decision table
//! (docs/design.md §4), every platform write, the exact shapes of projections (§2), what a
//! release restores, the release annotation, and each kind (§10), asserting allowed/denied, the
//! decoded JSON patch, the warning and the audit annotations exactly; and `validate_settings`
//! of the module.

use std::collections::BTreeMap;

use restage_gate::markers::{
    HELD_LABEL, HELD_SINCE_ANNOTATION, PENDING_ANNOTATION, RELEASE_ANNOTATION,
};
use restage_gate::workload::ORIGINAL_STRATEGY_ANNOTATION;
use restage_gate_e2e::host::policy_under_test;
use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::guest::Guest;
use restage_gate_testkit::admission::{request, validation_request};
use restage_gate_testkit::descriptor::Descriptor;
use restage_gate_testkit::edit::with;
use restage_gate_testkit::fixtures::{cache_binding, daemonset, deployment, orders_binding};
use restage_gate_testkit::hold::{annotation_path, held, label_path};
use restage_gate_testkit::korifi::{desired, orders_db, runner_write, unbound, upsi};
use restage_gate_testkit::kubectl::{annotate, rollout_restart, rollout_resume};
use restage_gate_testkit::lookalike::{self, change_root, declare_root};
use restage_gate_testkit::lookup;
use restage_gate_testkit::projector::{bind, project, project_vmware, unbind, unproject, Binding};
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

type Kind = &'static dyn Descriptor;

/// The kind of a fixture object.
fn kind(object: &Value) -> Kind {
    lookup::of_fixture(object)
}

/// The kind of a fixture object, as the API names it.
fn kind_of(object: &Value) -> &'static str {
    kind(object).name()
}

/// The ops that write (`add`) the label and annotations of a hold.
fn add_markers(kind: Kind, remembered: &str, since: &str, pending: &str) -> Vec<Value> {
    vec![
        json!({"op": "add", "path": annotation_path(HELD_SINCE_ANNOTATION), "value": since}),
        json!({"op": "add", "path": annotation_path(kind.remembered_annotation()), "value": remembered}),
        json!({"op": "add", "path": annotation_path(PENDING_ANNOTATION), "value": pending}),
        json!({"op": "add", "path": label_path(HELD_LABEL), "value": "true"}),
    ]
}

/// The ops that remove the label and annotations of a hold.
fn remove_markers(kind: Kind) -> Vec<Value> {
    [
        annotation_path(HELD_SINCE_ANNOTATION),
        annotation_path(kind.remembered_annotation()),
        annotation_path(PENDING_ANNOTATION),
        label_path(HELD_LABEL),
    ]
    .into_iter()
    .map(|path| json!({"op": "remove", "path": path}))
    .collect()
}

/// A first hold of a fixture workload that runs with its usual control.
fn hold_patch(kind: Kind, since: &str, pending: &str) -> Vec<Value> {
    let mut ops = add_markers(kind, &kind.fixture_control().to_string(), since, pending);
    ops.extend(kind.hold_ops());
    ops
}

/// A release back to the API default control (which every fixture runs with).
fn release_patch(kind: Kind) -> Vec<Value> {
    let mut ops = remove_markers(kind);
    ops.extend(kind.restore_ops());
    ops
}

fn audit(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The namespace and name of an object.
fn place(object: &Value) -> (&str, &str) {
    let meta = |key: &str| object["metadata"][key].as_str().unwrap_or_default();
    (meta("namespace"), meta("name"))
}

/// The command that applies held changes now, for a fixture workload.
fn apply_now(object: &Value) -> String {
    let (namespace, name) = place(object);
    kind(object).apply_now(namespace, name)
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
    held_first(object, hold_patch(kind(object), NOW, pending), pending)
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

/// Released with the API default, because the remembered `text` is not valid for the kind.
fn released_default(object: &Value, because: &str, text: &str, pending: &str) -> Expect {
    let field = kind(object)
        .control_path()
        .trim_start_matches('/')
        .replace('/', ".");
    let patch = release_patch(kind(object));
    let kind = kind_of(object);
    Expect {
        allowed: true,
        patch,
        warning: Some(format!(
            "restage-gate: {kind} released, API default {field} restored (remembered one invalid): {because}"
        )),
        audit: audit(&[
            ("decision", "released"),
            ("released", pending),
            ("reason", &format!("{because}; remembered {field} {text} is not valid for a {kind}, restored the API default")),
        ]),
        message: None,
    }
}

/// A change accepted unchanged that rolls now.
fn rolling(object: &Value, why: &str) -> Expect {
    Expect {
        allowed: true,
        patch: vec![],
        warning: Some(format!(
            "restage-gate: {} rolls now: {why}",
            kind_of(object)
        )),
        audit: audit(&[("decision", "rolling"), ("reason", why)]),
        message: None,
    }
}

fn not_held(object: &Value) -> Expect {
    Expect {
        allowed: true,
        patch: vec![json!({"op": "remove", "path": annotation_path(RELEASE_ANNOTATION)})],
        warning: Some(format!(
            "restage-gate: {} is not held; removed {RELEASE_ANNOTATION}",
            kind_of(object)
        )),
        audit: audit(&[("decision", "not-held")]),
        message: None,
    }
}

/// Refused in reject mode: the message names the kind, the workload, the app guid when there is
/// one, the bindings and the ways to apply the change now.
fn rejected(object: &Value, bindings: &str) -> Expect {
    let restart = kind(object).restart(place(object).0, place(object).1);
    let kind = kind_of(object);
    let (namespace, name) = place(object);
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
            "restage-gate refused an update of {kind} {namespace}/{name}{app}: its only pod-template change is service binding {bindings}, which would restart every pod (mode: reject). To apply it now, restart or restage the app (cf restart / cf restage), or run `{restart}`.",
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

fn release_requested(object: Value) -> Value {
    with(object, |s| annotate(s, RELEASE_ANNOTATION, "now"))
}

/// The owner's own control that keeps pods from rolling (`OnDelete`, a pause).
fn stopped(object: Value) -> Value {
    kind(&object).stopped_by_owner(object)
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
        ("runner patch while held", defer(), "UPDATE", held_uo(), runner_write(&held_uo(), &desired(0, 1)), kept(&sts, hold_patch(kind(&sts), SINCE, &uo), &uo)),
        ("runner patch while not held", defer(), "UPDATE", both(), runner_write(&both(), &desired(0, 1)), plain()),
        ("no change while held", defer(), "UPDATE", held_u(), held_u(), kept(&sts, vec![], &u)),
        ("scale while held", defer(), "UPDATE", held_u(), scaled(held_u(), 3), kept(&sts, vec![], &u)),
        ("scale", defer(), "UPDATE", bound(), scaled(bound(), 3), plain()),
        ("no change", defer(), "UPDATE", bound(), bound(), plain()),
        ("rolling deploy while held", defer(), "UPDATE", held_uo(), runner_write(&held_uo(), &desired(1, 1)), released(&sts, vec![], "restart or restage", &uo)),
        ("rollout restart while held", defer(), "UPDATE", held_u(), restarted(held_u()), released(&sts, release_patch(kind(&sts)), "restart or restage", &u)),
        ("unknown pod-spec field while held", defer(), "UPDATE", held_u(), unknown_field(held_u()), released(&sts, release_patch(kind(&sts)), "restart or restage", &u)),
        ("unknown pod-spec field", defer(), "UPDATE", unbound(), unknown_field(bound()), plain()),
        ("rollout restart", defer(), "UPDATE", bound(), restarted(bound()), plain()),
        ("bind during a rollout", defer(), "UPDATE", in_rollout.clone(), scaled(bound(), 3), plain()),
        ("bind with the user's own OnDelete", defer(), "UPDATE", stopped(unbound()), stopped(bound()), plain()),
        ("projection with type, provider and env mappings", defer(), "UPDATE", unbound(), mapped, first_hold(&sts, "+orders-db")),
        ("bind in a maintenance window", open_window(), "UPDATE", unbound(), bound(), plain()),
        ("held, window open", open_window(), "UPDATE", held_u(), held_u(), released(&sts, release_patch(kind(&sts)), ALWAYS, &u)),
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

/// An app that declares its own `SERVICE_BINDING_ROOT`, unbound and bound to `upsi` under it.
fn app_with_root(root: &str) -> (Value, Value) {
    let unbound = with(unbound(), |s| declare_root(s, root));
    let bound = with(unbound.clone(), |s| project(s, &upsi()));
    (unbound, bound)
}

fn vmware(object: Value) -> Value {
    let mut binding = Binding::new("", "legacy-db", "legacy-db-secret");
    binding.env = vec![("DATABASE_URL".into(), "uri".into())];
    with(object, |s| {
        project_vmware(s, "4b2c350fb984fc36b6cf39515a2efced0fcb5053", &binding)
    })
}

#[test]
fn module_recognises_projections_by_their_exact_shape() {
    let sts = unbound();
    let u = format!("+{}", upsi_name());
    let (unbound_own, bound_own) = app_with_root("/etc/svc");
    let root_changed = with(bound_own.clone(), |s| {
        change_root(
            s,
            Some(json!({"name": "SERVICE_BINDING_ROOT", "value": "/srv/bindings"})),
        )
    });
    let held_own = || held(bound_own.clone(), &u, SINCE);
    let release = || release_patch(kind(&sts));
    let restage = "restart or restage";

    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("own root changed", defer(), "UPDATE", bound_own.clone(), root_changed.clone(), plain()),
        ("own root added", defer(), "UPDATE", unbound(), unbound_own.clone(), plain()),
        ("own root removed", defer(), "UPDATE", unbound_own.clone(), unbound(), plain()),
        ("own root changed while held", defer(), "UPDATE", held_own(),
            with(held_own(), |s| change_root(s, Some(json!({"name": "SERVICE_BINDING_ROOT", "value": "/srv/bindings"})))),
            released(&sts, release(), restage, &u)),
        ("own root changed, reject mode", reject(), "UPDATE", bound_own.clone(), root_changed, plain()),
        ("a bind under the app's own root", defer(), "UPDATE", unbound_own.clone(), bound_own.clone(), first_hold(&sts, &u)),
        ("the last unbind while the app declares its own root", defer(), "UPDATE", bound_own.clone(),
            with(bound_own.clone(), |s| unproject(s, &upsi().uid, true)), first_hold(&sts, &format!("-{}", upsi_name()))),
        ("a VMware bind with env mappings", defer(), "UPDATE", unbound(), vmware(unbound()), first_hold(&sts, "+legacy-db")),
        ("a VMware bind with env mappings, reject mode", reject(), "UPDATE", unbound(), vmware(unbound()), rejected(&sts, "+legacy-db")),
    ];
    check(cases);
    let mut lookalikes: Vec<Case<String>> = Vec::new();
    for (name, volume) in lookalike::volumes() {
        let add = |s: Value| with(s, |s| lookalike::mount(s, &volume));
        let held_u = || held(bound(), &u, SINCE);
        #[rustfmt::skip]
        lookalikes.extend([
            (format!("{name} (defer)"), defer(), "UPDATE", bound(), add(bound()), plain()),
            (format!("{name} (reject)"), reject(), "UPDATE", bound(), add(bound()), plain()),
            (format!("{name} (held)"), defer(), "UPDATE", held_u(), add(held_u()), released(&sts, release(), restage, &u)),
        ]);
    }
    check(lookalikes);
}

#[test]
fn a_controller_overwrite_of_a_held_app_with_its_own_root_keeps_every_marker() {
    let (unbound_own, bound_own) = app_with_root("/etc/svc");
    let pending = format!("+{} +orders-db", upsi_name());
    let old = held(
        with(bound_own, |s| project(s, &orders_db())),
        &pending,
        SINCE,
    );
    // the runner's desired state keeps the app's own root and drops every projection
    let overwrite = runner_write(&old, &unbound_own);
    let sts = unbound();
    check(vec![(
        "controller overwrite while held",
        defer(),
        "UPDATE",
        old.clone(),
        overwrite.clone(),
        kept(&sts, hold_patch(kind(&sts), SINCE, &pending), &pending),
    )]);
    // what it stores is the old object's hold: the next identical write changes nothing
    let stored = evaluate(&defer(), "UPDATE", &old, &overwrite).object;
    let again = evaluate(&defer(), "UPDATE", &stored, &overwrite).object;
    assert_eq!(again, stored);
}

#[test]
fn module_restores_only_strategies_the_api_server_accepts() {
    let sts = unbound();
    let remembering = |text: &str| {
        with(held(bound(), "+x", SINCE), |s| {
            s["metadata"]["annotations"][ORIGINAL_STRATEGY_ANNOTATION] = json!(text)
        })
    };
    let restage = "restart or restage";
    let mut cases: Vec<Case> = Vec::new();
    for text in [
        "not json",
        r#"{"type":"Recreate"}"#,
        r#"{"rollingUpdate":{"partition":2147483648},"type":"RollingUpdate"}"#,
        r#"{"rollingUpdate":{"partition":1.5},"type":"RollingUpdate"}"#,
        r#"{"rollingUpdate":{"maxUnavailable":0},"type":"RollingUpdate"}"#,
    ] {
        let old = remembering(text);
        cases.push((
            "tampered or out-of-range remembered strategy",
            defer(),
            "UPDATE",
            old.clone(),
            restarted(old),
            released_default(&sts, restage, text, "+x"),
        ));
    }
    let canary = json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 3}});
    let labelled = with(bound(), |s| {
        s["metadata"]["labels"][HELD_LABEL] = json!("true");
        s["spec"]["updateStrategy"] = canary.clone();
    });
    let mut remembers_canary = add_markers(kind(&sts), &canary.to_string(), NOW, "");
    remembers_canary.retain(|op| op["path"] != label_path(HELD_LABEL));
    remembers_canary.extend(kind(&sts).hold_ops());
    #[rustfmt::skip]
    cases.extend([
        ("a label without annotations remembers the current strategy", defer(), "UPDATE", labelled.clone(), labelled.clone(),
            kept_since(&sts, NOW, remembers_canary, "")),
        ("a label without annotations never releases to partition 0", defer(), "UPDATE", labelled.clone(), restarted(labelled),
            released(&sts, vec![json!({"op": "remove", "path": label_path(HELD_LABEL)})], restage, "")),
    ]);
    check(cases);
}

#[test]
fn module_releases_on_the_release_annotation() {
    let mut cases: Vec<Case> = Vec::new();
    for object in lookup::every().iter().map(|d| d.fixture()) {
        let bound = with(object.clone(), |s| project(s, &orders_db()));
        let held_bound = held(bound.clone(), "+orders-db", SINCE);
        let mut patch = release_patch(kind(&object));
        patch.push(json!({"op": "remove", "path": annotation_path(RELEASE_ANNOTATION)}));
        cases.push((
            "release annotation on a held workload",
            defer(),
            "UPDATE",
            held_bound.clone(),
            release_requested(held_bound),
            released(&object, patch, "release requested", "+orders-db"),
        ));
        cases.push((
            "release annotation on a workload not held",
            defer(),
            "UPDATE",
            bound.clone(),
            release_requested(bound.clone()),
            not_held(&object),
        ));
        cases.push((
            "release annotation in reject mode",
            reject(),
            "UPDATE",
            bound.clone(),
            release_requested(bound),
            plain(),
        ));
    }
    check(cases);
}

#[test]
fn module_holds_daemonsets_with_on_delete() {
    let ds = daemonset();
    let bound = || bind(daemonset(), &orders_binding());
    let held_bound = || held(bound(), "+orders-db", SINCE);
    let both = "+orders-db +cache";
    let mid_rollout = || {
        with(daemonset(), |d| {
            d["status"]["updatedNumberScheduled"] = json!(2)
        })
    };
    let pending_patch =
        vec![json!({"op": "replace", "path": annotation_path(PENDING_ANNOTATION), "value": both})];
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("DaemonSet bind", defer(), "UPDATE", daemonset(), bound(), first_hold(&ds, "+orders-db")),
        ("DaemonSet unbind", defer(), "UPDATE", bound(), unbind(bound(), &orders_binding()), first_hold(&ds, "-orders-db")),
        ("DaemonSet second bind while held", defer(), "UPDATE", held_bound(), bind(held_bound(), &cache_binding()), kept(&ds, pending_patch, both)),
        ("DaemonSet no change while held", defer(), "UPDATE", held_bound(), held_bound(), kept(&ds, vec![], "+orders-db")),
        ("DaemonSet wipe", defer(), "UPDATE", bound(), daemonset(), plain()),
        ("DaemonSet wipe while held", defer(), "UPDATE", held_bound(), daemonset(), kept(&ds, hold_patch(kind(&ds), SINCE, "+orders-db"), "+orders-db")),
        ("DaemonSet restage while held", defer(), "UPDATE", held_bound(), restarted(held_bound()), released(&ds, release_patch(kind(&ds)), "restart or restage", "+orders-db")),
        ("DaemonSet held, window open", open_window(), "UPDATE", held_bound(), held_bound(), released(&ds, release_patch(kind(&ds)), ALWAYS, "+orders-db")),
        ("DaemonSet bind during a rollout", defer(), "UPDATE", mid_rollout(), bind(mid_rollout(), &orders_binding()), plain()),
        ("DaemonSet bind with its own OnDelete", defer(), "UPDATE", stopped(daemonset()), stopped(bound()), plain()),
        ("DaemonSet reject mode bind", reject(), "UPDATE", daemonset(), bound(), rejected(&ds, "+orders-db")),
    ];
    check(cases);
}

#[test]
fn module_holds_deployments_with_paused_and_never_holds_an_unbind() {
    let d = deployment();
    let bound = || bind(deployment(), &orders_binding());
    let held_bound = || held(bound(), "+orders-db", SINCE);
    let paused = |o: Value| with(o, |o| o["spec"]["paused"] = json!(true));
    let resumed = |o: Value| with(o, rollout_resume);
    let mid_rollout = || {
        with(deployment(), |o| {
            o["status"]["conditions"][1]["reason"] = json!("ReplicaSetUpdated");
        })
    };
    let both = "+orders-db +cache";
    let pending_patch =
        vec![json!({"op": "replace", "path": annotation_path(PENDING_ANNOTATION), "value": both})];
    let unbound_why =
        "binding orders-db removed; a paused Deployment would start new pods from the old template";
    let rotated = Binding {
        secret: "orders-db-secret-2".into(),
        ..orders_binding()
    };
    let switched_why = "binding orders-db switched from secret orders-db-secret; a paused Deployment would start new pods from the old template";
    // a template-only overwrite by a controller that leaves `paused` alone
    let template_wipe = with(held_bound(), |o| {
        o["spec"]["template"] = deployment()["spec"]["template"].clone();
        o["metadata"]["labels"] = deployment()["metadata"]["labels"].clone();
        o["metadata"]["annotations"] = deployment()["metadata"]["annotations"].clone();
    });
    let rewrite_markers = add_markers(kind(&d), "false", SINCE, "+orders-db");
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("Deployment bind", defer(), "UPDATE", deployment(), bound(), first_hold(&d, "+orders-db")),
        ("Deployment bind in place (type added)", defer(), "UPDATE", bound(),
            bind(bound(), &Binding { type_: Some("postgresql".into()), ..orders_binding() }), first_hold(&d, "~orders-db")),
        ("Deployment second bind while held", defer(), "UPDATE", held_bound(), bind(held_bound(), &cache_binding()), kept(&d, pending_patch, both)),
        ("Deployment scale while held", defer(), "UPDATE", held_bound(), scaled(held_bound(), 5), kept(&d, vec![], "+orders-db")),
        ("Deployment wipe", defer(), "UPDATE", bound(), deployment(), plain()),
        ("Deployment template wipe while held", defer(), "UPDATE", held_bound(), template_wipe, kept(&d, rewrite_markers, "+orders-db")),
        ("Deployment restage while held", defer(), "UPDATE", held_bound(), restarted(held_bound()), released(&d, release_patch(kind(&d)), "restart or restage", "+orders-db")),
        ("Deployment rollout resume while held", defer(), "UPDATE", held_bound(), resumed(held_bound()), released(&d, remove_markers(kind(&d)), "rollout resumed", "+orders-db")),
        // a controller's full-spec write without `paused` unpauses it: a release too
        ("Deployment full-spec overwrite while held", defer(), "UPDATE", held_bound(), deployment(), released(&d, vec![], "rollout resumed", "+orders-db")),
        ("Deployment unbind", defer(), "UPDATE", bound(), unbind(bound(), &orders_binding()), rolling(&d, unbound_why)),
        ("Deployment unbind while held", defer(), "UPDATE", held_bound(), unbind(held_bound(), &orders_binding()), released(&d, release_patch(kind(&d)), unbound_why, "+orders-db")),
        ("Deployment binding secret switched", defer(), "UPDATE", bound(), bind(bound(), &rotated), rolling(&d, switched_why)),
        ("Deployment bind during a rollout", defer(), "UPDATE", mid_rollout(), bind(mid_rollout(), &orders_binding()), plain()),
        ("Deployment bind while its owner paused it", defer(), "UPDATE", paused(deployment()), paused(bound()), plain()),
        ("Deployment reject mode bind", reject(), "UPDATE", deployment(), bound(), rejected(&d, "+orders-db")),
    ];
    check(cases);
    let tampered = with(held_bound(), |o| {
        o["metadata"]["annotations"][kind(&d).remembered_annotation()] = json!("yes")
    });
    check(vec![(
        "Deployment tampered remembered paused",
        defer(),
        "UPDATE",
        tampered.clone(),
        restarted(tampered),
        released_default(&d, "restart or restage", "yes", "+orders-db"),
    )]);
    assert_eq!(kind(&d).held_control(), json!(true));
}

/// Every kind in both modes: a change that removes a binding or switches the secret one
/// projects is never refused (the kept template would mount a secret being deleted), a bind is;
/// a plain `secret` volume of an extra prefix projects a binding secret too; and an owner's
/// `kubectl rollout resume` of a Deployment the policy does not hold is never paused again.
#[test]
fn module_never_refuses_a_secret_removal_and_never_pauses_an_owners_resume() {
    use restage_gate_testkit::secret_volume::{self, attach, detach, switch_secret};
    let orders = orders_binding();
    let switched = Binding {
        secret: "orders-db-secret-2".into(),
        ..orders_binding()
    };
    let not_refused = "not refused, new pods would mount a deleted secret";
    let extra = |mode| secret_volume::settings(mode);
    let mut cases: Vec<Case<String>> = Vec::new();
    for d in lookup::every() {
        let kind = d.name();
        let w = d.fixture();
        let bound = || bind(d.fixture(), &orders);
        let ledger = || attach(d.fixture(), "ledger", "ledger-secret");
        let ledger_switched = || switch_secret(ledger(), "ledger", "ledger-secret-2");
        let removed = format!("binding orders-db removed; {not_refused}");
        let switched_away =
            format!("binding orders-db switched from secret orders-db-secret; {not_refused}");
        let ledger_away = "binding ledger switched from secret ledger-secret";
        // defer mode: an `OnDelete` kind holds it, a Deployment rolls it now
        let defer_switch = match d.unbinds_roll_now() {
            Some(why) => rolling(&w, &format!("{ledger_away}; {why}")),
            None => first_hold(&w, "~ledger"),
        };
        #[rustfmt::skip]
        cases.extend([
            (format!("{kind} reject mode unbind"), reject(), "UPDATE", bound(), unbind(bound(), &orders), rolling(&w, &removed)),
            (format!("{kind} reject mode secret switch"), reject(), "UPDATE", bound(), bind(bound(), &switched), rolling(&w, &switched_away)),
            (format!("{kind} reject mode bind"), reject(), "UPDATE", w.clone(), bound(), rejected(&w, "+orders-db")),
            (format!("{kind} extra-prefix secret volume bind"), extra("defer"), "UPDATE", w.clone(), ledger(), first_hold(&w, "+ledger")),
            (format!("{kind} extra-prefix secret volume switch"), extra("defer"), "UPDATE", ledger(), ledger_switched(), defer_switch),
            (format!("{kind} extra-prefix secret volume switch, reject mode"), extra("reject"), "UPDATE", ledger(), ledger_switched(), rolling(&w, &format!("{ledger_away}; {not_refused}"))),
            (format!("{kind} extra-prefix secret volume unbind, reject mode"), extra("reject"), "UPDATE", ledger(), detach(ledger(), "ledger"), rolling(&w, &format!("binding ledger removed; {not_refused}"))),
            (format!("{kind} extra-prefix secret volume bind, reject mode"), extra("reject"), "UPDATE", w.clone(), ledger(), rejected(&w, "+ledger")),
        ]);
    }
    // the kinds whose owner resumes a rollout with a command of its own
    for d in lookup::every()
        .into_iter()
        .filter(|d| d.resumed(&d.fixture()).is_some())
    {
        let (kind, w) = (d.name(), d.fixture());
        let paused = |o: Value| d.stopped_by_owner(o);
        let resumed = |o: Value| d.resumed(&o).unwrap_or_default();
        let bound = || bind(d.fixture(), &orders);
        #[rustfmt::skip]
        cases.extend([
            (format!("{kind} owner's resume with a bind"), defer(), "UPDATE", paused(w.clone()), resumed(paused(bound())), plain()),
            (format!("{kind} owner's resume with a bind, reject mode"), reject(), "UPDATE", paused(w.clone()), resumed(paused(bound())), plain()),
            (format!("{kind} owner's resume with an unbind"), defer(), "UPDATE", paused(bound()), resumed(paused(w.clone())), plain()),
            (format!("{kind} bind while its owner keeps it paused"), defer(), "UPDATE", paused(w.clone()), paused(bound()), plain()),
            (format!("{kind} resume of a held {kind}"), defer(), "UPDATE", held(bound(), "+orders-db", SINCE), resumed(held(bound(), "+orders-db", SINCE)), released(&w, remove_markers(d), "rollout resumed", "+orders-db")),
        ]);
    }
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
    // a ReplicaSet in the group of the workloads held, and kinds of other groups
    let replica_sets = lookup::every()
        .into_iter()
        .map(|k| (k.api_version(), "ReplicaSet"));
    let others = [
        ("v1", "ReplicationController"),
        ("batch/v1", "CronJob"),
        ("batch/v1", "Job"),
    ]
    .map(|(v, k)| (v.to_string(), k));
    for (api_version, kind) in replica_sets.chain(others) {
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

/// kwctl annotates with what the module's `protocol_version` answers, the project's own
/// annotator with what `metadata.yml` declares: the two must be the same.
#[test]
fn module_speaks_the_protocol_metadata_declares() {
    let root = restage_gate_release::repository::root();
    let metadata = restage_gate_release::repository::read(&root, "metadata.yml")
        .and_then(|text| restage_gate_release::metadata::read_yaml(&text))
        .expect("metadata.yml");
    let declared = restage_gate_release::metadata::declared_protocol(&metadata);
    assert_eq!(declared.as_deref(), Ok("v1"));
    assert_eq!(policy_under_test().protocol_version(), Ok(json!("v1")));
}
