//! The ValidatingAdmissionPolicy of `window-release.yaml`, evaluated as the API server evaluates
//! it: its match conditions, then its variables in order (each seeing the earlier ones as
//! `variables.NAME`), then its validations, on `request`, `object` (as stored, after every
//! mutating webhook) and `oldObject`. The objects are the project's fixtures held by the test
//! kit or by restage-gate itself, what restage-gate answers to the job's write, in a maintenance
//! window and outside every window, and what a stolen token of the job could send instead.
//!
//! The interpreter is cel-rust, not the API server's cel-go: what the expressions use lies in
//! their common part (`has()`, `in` on maps and lists, `startsWith`, `contains`, `exists`,
//! `all`, `filter`, `map`, `size`, `dyn`, `type()` compared with `string` and `bool`,
//! `string()` of an integer, `+` on strings, conditionals, map and list equality, and the
//! strings extension's `join`). What only the API server checks, and no test here: each
//! expression type-checked against each matched kind's schema (`dyn(...)` keeps the fields of
//! `spec` and `metadata` out of it), a list or map literal whose elements differ in type refused
//! (the per-kind maps wrap each value in `dyn()`), and the cost limits. JSON integers are `uint`
//! here and `int` there: the expressions compare values read from the same objects, and write
//! integers as JSON with `string()`, which is the same decimal for both.

use std::collections::HashMap;
use std::sync::Arc;

use cel::{Context, Env, Program, Value as Cel};
use restage_gate::clock::UtcTime;
use restage_gate::markers::{
    HELD_LABEL, HELD_SINCE_ANNOTATION, MARKER_PREFIX, PENDING_ANNOTATION, RELEASE_ANNOTATION,
    RELEASE_IN_WINDOW,
};
use restage_gate::workload::kinds;
use restage_gate::workload::Workload;
use restage_gate_testkit::admission::{request, validation_request};
use restage_gate_testkit::edit::{remove, set, with};
use restage_gate_testkit::fixtures::orders_binding;
use restage_gate_testkit::hold::{
    annotation, control_path, default_control, held, held_control, is_held, label_path, markers_on,
    remembered_annotation,
};
use restage_gate_testkit::kubectl::annotate;
use restage_gate_testkit::lookup::unbound;
use restage_gate_testkit::projector::bind;
use serde_json::{json, Value};

use super::{document, job_identity};

/// What the API server does with a write.
#[derive(Debug, PartialEq)]
enum Verdict {
    /// No match condition holds: the policy does not look at the write.
    NotMatched,
    Allowed,
    /// Refused, with the message.
    Denied(String),
}

struct Validation {
    expression: Program,
    message: Program,
}

struct AdmissionPolicy {
    env: Arc<Env>,
    match_conditions: Vec<Program>,
    variables: Vec<(String, Program)>,
    validations: Vec<Validation>,
}

fn compile(env: &Env, source: &Value) -> Program {
    let source = source.as_str().expect("an expression");
    env.compile(source)
        .unwrap_or_else(|e| panic!("{source}: {e:?}"))
}

fn to_cel(json: &Value) -> Cel {
    cel::to_value(json).expect("JSON is a CEL value")
}

impl AdmissionPolicy {
    fn of_manifest() -> AdmissionPolicy {
        let spec = document("ValidatingAdmissionPolicy")["spec"].clone();
        let mut env = Env::stdlib();
        env.add_extension(cel::extensions::strings)
            .expect("the strings extension");
        let list = |key: &str| spec[key].as_array().cloned().unwrap_or_default();
        let match_conditions = list("matchConditions")
            .iter()
            .map(|c| compile(&env, &c["expression"]))
            .collect();
        let variables = list("variables")
            .iter()
            .map(|v| {
                let name = v["name"].as_str().expect("a name").to_string();
                (name, compile(&env, &v["expression"]))
            })
            .collect();
        let validations = list("validations")
            .iter()
            .map(|v| Validation {
                expression: compile(&env, &v["expression"]),
                message: compile(&env, &v["messageExpression"]),
            })
            .collect();
        AdmissionPolicy {
            env: Arc::new(env),
            match_conditions,
            variables,
            validations,
        }
    }

    /// The context of one admission request; `variables` holds those evaluated so far.
    fn context(&self, review: &Value, variables: &HashMap<String, Cel>) -> Context<'_, '_> {
        let mut context = Context::with_env(Arc::clone(&self.env));
        let mut request = review.clone();
        let object = request["object"].take();
        let old_object = request["oldObject"].take();
        if let Some(r) = request.as_object_mut() {
            r.remove("object");
            r.remove("oldObject");
        }
        context.add_variable_from_value("request", to_cel(&request));
        context.add_variable_from_value("object", to_cel(&object));
        context.add_variable_from_value("oldObject", to_cel(&old_object));
        context.add_variable_from_value("variables", Cel::from(variables.clone()));
        context
    }

    /// Every variable, in order; an expression that fails names itself (the API server
    /// then applies the failure policy).
    fn variables(&self, review: &Value) -> Result<HashMap<String, Cel>, String> {
        let mut variables = HashMap::new();
        for (name, program) in &self.variables {
            let value = program
                .execute(&self.context(review, &variables))
                .map_err(|e| format!("variables.{name}: {e}"))?;
            variables.insert(name.clone(), value);
        }
        Ok(variables)
    }

    fn variable(&self, review: &Value, name: &str) -> Value {
        let value = self.variables(review).expect("variables")[name].clone();
        value.json().expect("JSON")
    }

    fn review(&self, review: &Value) -> Result<Verdict, String> {
        let empty = self.context(review, &HashMap::new());
        for condition in &self.match_conditions {
            if condition.execute(&empty).map_err(|e| e.to_string())? != Cel::Bool(true) {
                return Ok(Verdict::NotMatched);
            }
        }
        let context = self.context(review, &self.variables(review)?);
        for validation in &self.validations {
            match validation.expression.execute(&context) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => {
                    let message = validation
                        .message
                        .execute(&context)
                        .map_err(|e| format!("messageExpression: {e}"))?;
                    return Ok(Verdict::Denied(match message {
                        Cel::String(s) => s.to_string(),
                        other => format!("{other:?}"),
                    }));
                }
                other => return Err(format!("validation: {other:?}")),
            }
        }
        Ok(Verdict::Allowed)
    }
}

/// The job's write of `old`, stored as `stored`: the admission request the policy sees.
fn job_request(old: &Value, stored: &Value) -> Value {
    let mut review = request("UPDATE", old, stored);
    review["userInfo"] = json!({"username": job_identity(),
        "groups": ["system:serviceaccounts", "system:serviceaccounts:kubewarden", "system:authenticated"]});
    review
}

fn verdict(old: &Value, stored: &Value) -> Verdict {
    AdmissionPolicy::of_manifest()
        .review(&job_request(old, stored))
        .unwrap_or_else(|e| panic!("the admission policy failed: {e}"))
}

/// A window every Saturday 02:00 to 04:00 UTC.
fn settings() -> Value {
    json!({"mode": "defer", "maintenanceWindows": [{"days": ["Sat"], "start": "02:00", "end": "04:00"}]})
}

/// A Saturday, inside that window and after it (checked by `the_instants_are_inside_and_outside_the_window`).
const IN_WINDOW: UtcTime = UtcTime(1_796_439_600);
const OUTSIDE_WINDOWS: UtcTime = UtcTime(1_796_472_000);

fn held_workload(kind: &'static dyn Workload) -> Value {
    held(unbound(kind), "+orders-db", "2026-12-01T09:00:00Z")
}

/// The job's write: the release annotation with the value that waits for a window.
fn job_write(old: &Value) -> Value {
    with(old.clone(), |o| {
        annotate(o, RELEASE_ANNOTATION, RELEASE_IN_WINDOW)
    })
}

/// `new` as stored after restage-gate's answer at `now`.
fn through_restage_gate(old: &Value, new: &Value, now: UtcTime) -> Value {
    let payload = validation_request(&settings(), &request("UPDATE", old, new));
    let answer = restage_gate::evaluate(payload.to_string().as_bytes(), now);
    assert!(answer.accepted, "{:?}", answer.message);
    answer.mutated_object.unwrap_or_else(|| new.clone())
}

/// The job's write of `old`, stored as `stored`, is refused, naming exactly `changed`.
fn assert_denied(old: &Value, stored: &Value, changed: &[&str], kind: impl std::fmt::Display) {
    let Verdict::Denied(message) = verdict(old, stored) else {
        panic!("{kind}: allowed, {changed:?} changed");
    };
    assert!(
        message.starts_with(
            "restage-gate-window-release may only set restage-gate.io/release=window on held workloads; this write to "
        ),
        "{message}"
    );
    let named = message
        .split_once(" also changes ")
        .and_then(|(_, named)| named.strip_suffix("; send restage-gate.io/release=window alone"))
        .unwrap_or_default();
    let mut named: Vec<&str> = named.split(", ").collect();
    named.sort_unstable();
    let mut want = changed.to_vec();
    want.sort_unstable();
    assert_eq!(named, want, "{kind}: {message}");
}

/// The control's field as the message names it: `spec.updateStrategy`.
fn control_field(kind: &'static dyn Workload) -> String {
    kind.control_path().join(".")
}

/// What a release removes, as the message names it: the label and every annotation of a hold.
fn removed_markers(kind: &'static dyn Workload) -> Vec<String> {
    let mut out = vec![format!("label {HELD_LABEL}")];
    out.extend(
        [
            HELD_SINCE_ANNOTATION,
            PENDING_ANNOTATION,
            remembered_annotation(kind),
        ]
        .map(|a| format!("annotation {a}")),
    );
    out
}

/// What the message names for a write that removes the markers with a control other than the
/// one to restore: the control, and the markers, which only a release may remove.
fn wrong_control_named(kind: &'static dyn Workload) -> Vec<String> {
    let mut out = vec![control_field(kind)];
    out.extend(removed_markers(kind));
    out
}

fn as_strs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

/// The unbound workload of `kind` running with `control` (`None`: without one), held by
/// restage-gate when a binding is projected into it, remembering that control.
fn held_by_restage_gate(kind: &'static dyn Workload, control: Option<&Value>) -> Value {
    let path = control_path(kind);
    let running = with(unbound(kind), |o| match control {
        Some(control) => set(o, &path, control.clone()),
        None => remove(o, &path),
    });
    let bound = bind(running.clone(), &orders_binding());
    let stored = through_restage_gate(&running, &bound, OUTSIDE_WINDOWS);
    assert!(is_held(&stored), "{kind}: held with {control:?}");
    let remembered = control
        .cloned()
        .unwrap_or_else(|| default_control(kind))
        .to_string();
    assert_eq!(
        annotation(&stored, remembered_annotation(kind)),
        Some(remembered.as_str()),
        "{kind}: remembered as serde_json writes it"
    );
    stored
}

/// The controls a workload may run with before a hold, each where the kind takes it (and it
/// lets pods roll): a partition, percentages, integers, a pause lifted.
fn original_controls() -> Vec<Value> {
    vec![
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}}),
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": "25%"}}),
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1, "maxUnavailable": 3}}),
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "25%"}}),
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "10%", "maxUnavailable": 0}}),
        json!(false),
    ]
}

fn takes(kind: &'static dyn Workload, control: &Value) -> bool {
    let w = kind;
    w.accepts(control) && !w.stops_rollouts(Some(control))
}

/// What a stolen token of the job can get stored for `old` by writing it as `edit` makes it:
/// with the job's annotation inside a window, with `release=now` outside every window (each
/// through restage-gate, which keeps a rolling control the write sets), and as sent while
/// restage-gate is unavailable: restage-gate's own release, edited.
fn stolen_token_writes(old: &Value, edit: impl Fn(&mut Value)) -> Vec<(&'static str, Value)> {
    let in_window = with(job_write(old), &edit);
    let now = with(
        with(old.clone(), |o| annotate(o, RELEASE_ANNOTATION, "now")),
        &edit,
    );
    let as_sent = with(through_restage_gate(old, &job_write(old), IN_WINDOW), &edit);
    vec![
        (
            "in a window",
            through_restage_gate(old, &in_window, IN_WINDOW),
        ),
        (
            "release=now",
            through_restage_gate(old, &now, OUTSIDE_WINDOWS),
        ),
        ("as sent", as_sent),
    ]
}

/// Each of the token's writes of `old` as `edit` makes it is released by restage-gate (or
/// stored released) with `control`, and refused, naming `named`.
fn assert_stolen_token_denied(
    kind: &'static dyn Workload,
    old: &Value,
    control: &Value,
    named: &[String],
    edit: impl Fn(&mut Value),
) {
    for (how, stored) in stolen_token_writes(old, edit) {
        assert!(!is_held(&stored), "{kind}, {how}: released");
        assert_eq!(
            stored.pointer(&control_path(kind)),
            Some(control),
            "{kind}, {how}: restage-gate keeps the control the write sets"
        );
        assert_denied(old, &stored, &as_strs(named), format!("{kind}, {how}"));
    }
}

#[test]
fn outside_every_window_the_jobs_write_stores_nothing_and_is_allowed() {
    for kind in kinds() {
        let old = held_workload(kind);
        let stored = through_restage_gate(&old, &job_write(&old), OUTSIDE_WINDOWS);
        assert_eq!(stored, old, "{kind}: restage-gate leaves it as it was");
        assert_eq!(verdict(&old, &stored), Verdict::Allowed, "{kind}");
    }
}

#[test]
fn in_a_window_restage_gates_release_of_the_jobs_write_is_allowed() {
    for kind in kinds() {
        let old = held_workload(kind);
        let stored = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        assert!(!is_held(&stored), "{kind}: released");
        assert_eq!(markers_on(&stored), Vec::<String>::new(), "{kind}");
        assert_eq!(
            stored.pointer(&control_path(kind)),
            Some(&default_control(kind)),
            "{kind}: the remembered control restored"
        );
        assert_eq!(verdict(&old, &stored), Verdict::Allowed, "{kind}");
    }
}

/// The API server stores a control released to `false` (a Deployment's `paused`) by leaving
/// it out.
#[test]
fn a_release_stored_without_a_false_control_is_allowed() {
    let mut checked = 0;
    for kind in kinds() {
        let old = held_workload(kind);
        let mut stored = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        let path = control_path(kind);
        if stored.pointer(&path) != Some(&json!(false)) {
            continue;
        }
        let (parent, field) = path.rsplit_once('/').expect("a field of an object");
        stored
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .expect("the control's object")
            .remove(field);
        assert_eq!(verdict(&old, &stored), Verdict::Allowed, "{kind}");
        checked += 1;
    }
    assert!(checked > 0, "no kind is released to a false control");
}

/// resourceVersion, generation (a release changes spec) and managedFields change with every
/// write the API server stores.
#[test]
fn metadata_the_api_server_writes_is_not_counted() {
    for kind in kinds() {
        let old = held_workload(kind);
        let released = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        let api_version = old["apiVersion"].clone();
        let stored = with(released, |o| {
            set(o, "/metadata/resourceVersion", json!("999999"));
            set(o, "/metadata/generation", json!(99));
            set(
                o,
                "/metadata/managedFields",
                json!([{"manager": "kubectl-annotate", "operation": "Update",
                        "apiVersion": api_version, "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:metadata": {"f:annotations": {}}}}]),
            );
        });
        assert_eq!(verdict(&old, &stored), Verdict::Allowed, "{kind}");
    }
}

/// With restage-gate unavailable (its failure policy lets writes through) the annotation is
/// stored as the job sent it, and acted on at the workload's next update.
#[test]
fn the_jobs_annotation_stored_as_sent_is_allowed() {
    for kind in kinds() {
        let old = held_workload(kind);
        assert_eq!(verdict(&old, &job_write(&old)), Verdict::Allowed, "{kind}");
    }
}

#[test]
fn writes_of_other_accounts_are_not_matched() {
    let policy = AdmissionPolicy::of_manifest();
    for kind in kinds() {
        let old = held_workload(kind);
        let changed = with(old.clone(), |o| {
            set(o, "/metadata/labels/team", json!("payments"))
        });
        for user in [
            "system:serviceaccount:cf:korifi-controllers-controller-manager",
            "system:serviceaccount:kubewarden:restage-gate-window-release-2",
            "system:serviceaccount:kubewarden:my-restage-gate-window-release",
            "restage-gate-window-release",
        ] {
            let mut review = job_request(&old, &changed);
            review["userInfo"]["username"] = json!(user);
            assert_eq!(policy.review(&review), Ok(Verdict::NotMatched), "{user}");
        }
    }
}

/// A ServiceAccount of the job's name in another namespace, bound to the job's role by mistake,
/// is matched and refused whatever it writes, the write the job itself may make included: it
/// is never let through unconfined.
#[test]
fn the_jobs_account_name_in_another_namespace_is_refused_whatever_it_writes() {
    let policy = AdmissionPolicy::of_manifest();
    let user = "system:serviceaccount:default:restage-gate-window-release";
    for kind in kinds() {
        let old = held_workload(kind);
        let nothing = through_restage_gate(&old, &job_write(&old), OUTSIDE_WINDOWS);
        let release = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        let label = with(old.clone(), |o| {
            set(o, "/metadata/labels/team", json!("payments"))
        });
        for stored in [nothing, release, label] {
            assert_eq!(verdict(&old, &stored), {
                let mut review = job_request(&old, &stored);
                review["userInfo"]["username"] = json!(job_identity());
                policy.review(&review).expect("reviewed")
            });
            let mut review = job_request(&old, &stored);
            review["userInfo"]["username"] = json!(user);
            let Ok(Verdict::Denied(message)) = policy.review(&review) else {
                panic!("{kind}: {user} was not refused");
            };
            let want = format!(
                "restage-gate-window-release writes from the namespace kubewarden only; {user} may not write "
            );
            assert!(message.starts_with(&want), "{message}");
        }
    }
}

#[test]
fn the_admission_policy_knows_each_kinds_control_and_its_held_value() {
    let policy = AdmissionPolicy::of_manifest();
    for kind in kinds() {
        let old = held_workload(kind);
        let review = job_request(&old, &old);
        let (member, nested) = match kind.control_path() {
            ["spec", member] => (*member, ""),
            ["spec", member, nested] => (*member, *nested),
            other => panic!("{other:?}: a field of spec or of a member of spec"),
        };
        assert_eq!(policy.variable(&review, "control"), json!(member), "{kind}");
        assert_eq!(
            policy.variable(&review, "controlMember"),
            json!(nested),
            "{kind}"
        );
        assert_eq!(
            policy.variable(&review, "heldControl"),
            held_control(kind),
            "{kind}"
        );
        assert_eq!(
            policy.variable(&review, "rememberedAnnotation"),
            json!(remembered_annotation(kind)),
            "{kind}"
        );
        assert_eq!(
            policy.variable(&review, "defaultControl"),
            json!(default_control(kind).to_string()),
            "{kind}: the default as restage-gate remembers it"
        );
    }
}

/// The JSON the policy writes of each control restage-gate restores is the JSON restage-gate
/// remembered, byte for byte.
#[test]
fn the_admission_policy_writes_each_control_as_restage_gate_remembers_it() {
    let policy = AdmissionPolicy::of_manifest();
    for kind in kinds() {
        let originals = original_controls().into_iter().filter(|c| takes(kind, c));
        for control in originals.chain([default_control(kind)]) {
            let old = held_by_restage_gate(kind, Some(&control));
            let stored = with(old.clone(), |o| {
                set(o, &control_path(kind), control.clone())
            });
            let review = job_request(&old, &stored);
            assert_eq!(
                policy.variable(&review, "controlJson"),
                json!(control.to_string()),
                "{kind}"
            );
        }
    }
}

#[test]
fn a_pod_template_change_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let stored = with(old.clone(), |o| {
            set(
                o,
                "/spec/template/spec/containers/0/image",
                json!("registry.example.com/evil:1"),
            )
        });
        assert_denied(&old, &stored, &["spec.template"], kind);
    }
}

#[test]
fn a_replicas_change_is_denied() {
    let mut kinds_with_replicas = 0;
    for kind in kinds() {
        let old = held_workload(kind);
        let Some(replicas) = old.pointer("/spec/replicas").and_then(Value::as_u64) else {
            continue;
        };
        kinds_with_replicas += 1;
        let stored = with(old.clone(), |o| {
            set(o, "/spec/replicas", json!(replicas + 5))
        });
        assert_denied(&old, &stored, &["spec.replicas"], kind);
        let scaled_to_zero = with(old.clone(), |o| set(o, "/spec/replicas", json!(0)));
        assert_denied(&old, &scaled_to_zero, &["spec.replicas"], kind);
    }
    assert!(kinds_with_replicas > 0, "a kind with replicas");
}

#[test]
fn a_spec_field_added_or_removed_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let added = with(old.clone(), |o| set(o, "/spec/minReadySeconds", json!(600)));
        assert_denied(&old, &added, &["spec.minReadySeconds"], kind);
        let removed = with(old.clone(), |o| {
            o["spec"]
                .as_object_mut()
                .expect("spec")
                .remove("revisionHistoryLimit");
        });
        assert_denied(&old, &removed, &["spec.revisionHistoryLimit"], kind);
    }
}

#[test]
fn another_label_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let added = with(old.clone(), |o| {
            set(o, "/metadata/labels/team", json!("payments"))
        });
        assert_denied(&old, &added, &["label team"], kind);
        let first = old["metadata"]["labels"]
            .as_object()
            .and_then(|l| l.keys().find(|k| !k.starts_with(MARKER_PREFIX)))
            .expect("a label of the workload's own")
            .clone();
        let removed = with(old.clone(), |o| {
            o["metadata"]["labels"]
                .as_object_mut()
                .expect("labels")
                .remove(&first);
        });
        assert_denied(&old, &removed, &[&format!("label {first}")], kind);
    }
}

#[test]
fn another_annotation_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let stored = with(job_write(&old), |o| {
            annotate(o, "example.com/owner", "mallory")
        });
        assert_denied(&old, &stored, &["annotation example.com/owner"], kind);
    }
}

#[test]
fn a_marker_added_is_denied() {
    for kind in kinds() {
        let old = unbound(kind);
        let labelled = with(old.clone(), |o| {
            set(
                o,
                &format!("/metadata/labels/{}", HELD_LABEL.replace('/', "~1")),
                json!("true"),
            )
        });
        assert_denied(&old, &labelled, &[&format!("label {HELD_LABEL}")], kind);
        let held = held_workload(kind);
        let extra = with(held.clone(), |o| annotate(o, "restage-gate.io/note", "x"));
        assert_denied(&held, &extra, &["annotation restage-gate.io/note"], kind);
    }
}

/// A remembered control edited to the held one would make the next release hold forever.
#[test]
fn a_marker_edited_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let remembered = remembered_annotation(kind);
        let stored = with(old.clone(), |o| {
            annotate(o, remembered, &held_control(kind).to_string())
        });
        assert_denied(&old, &stored, &[&format!("annotation {remembered}")], kind);
        let pending = with(old.clone(), |o| annotate(o, PENDING_ANNOTATION, ""));
        assert_denied(
            &old,
            &pending,
            &[&format!("annotation {PENDING_ANNOTATION}")],
            kind,
        );
    }
}

/// Stored as sent when restage-gate is unavailable, `now` would release outside any window at
/// the workload's next update.
#[test]
fn a_release_request_other_than_window_stored_as_sent_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let stored = with(old.clone(), |o| annotate(o, RELEASE_ANNOTATION, "now"));
        assert_denied(
            &old,
            &stored,
            &[&format!("annotation {RELEASE_ANNOTATION}")],
            kind,
        );
    }
}

#[test]
fn a_control_change_without_a_release_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let control = control_path(kind);
        let stored = with(old.clone(), |o| set(o, &control, default_control(kind)));
        assert!(is_held(&stored));
        assert_denied(&old, &stored, &[&control_field(kind)], kind);
    }
}

/// Markers dropped with the control left holding: no longer held as far as restage-gate
/// knows, and never rolled.
#[test]
fn markers_removed_while_the_control_still_holds_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let stored = with(old.clone(), |o| {
            for map in ["labels", "annotations"] {
                if let Some(m) = o["metadata"][map].as_object_mut() {
                    m.retain(|k, _| !k.starts_with(MARKER_PREFIX));
                }
            }
        });
        assert_denied(&old, &stored, &as_strs(&removed_markers(kind)), kind);
    }
}

/// restage-gate releases whatever the write carries with it; the admission policy refuses the
/// write when that is more than the release.
#[test]
fn a_release_that_also_changes_the_pod_template_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let image = with(job_write(&old), |o| {
            set(
                o,
                "/spec/template/spec/containers/0/image",
                json!("registry.example.com/evil:1"),
            )
        });
        let stored = through_restage_gate(&old, &image, IN_WINDOW);
        assert!(!is_held(&stored), "{kind}: restage-gate released it");
        assert_denied(&old, &stored, &["spec.template"], kind);
    }
}

#[test]
fn a_release_that_also_changes_another_label_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        for (how, stored) in
            stolen_token_writes(&old, |o| set(o, "/metadata/labels/team", json!("payments")))
        {
            assert!(!is_held(&stored), "{kind}, {how}: released");
            assert_denied(&old, &stored, &["label team"], format!("{kind}, {how}"));
        }
    }
}

/// A Deployment's `kubectl rollout resume` is a release: one that also scales is refused for
/// the scaling, even with the pause lifted to what restage-gate remembered.
#[test]
fn a_release_that_lifts_the_pause_and_scales_is_denied() {
    let mut checked = 0;
    for kind in kinds() {
        let old = held_workload(kind);
        if held_control(kind) != json!(true) || old.pointer("/spec/replicas").is_none() {
            continue;
        }
        let control = default_control(kind);
        for (how, stored) in stolen_token_writes(&old, |o| {
            set(o, &control_path(kind), control.clone());
            set(o, "/spec/replicas", json!(10));
        }) {
            assert!(!is_held(&stored), "{kind}, {how}: released");
            assert_eq!(stored.pointer(&control_path(kind)), Some(&control));
            assert_denied(&old, &stored, &["spec.replicas"], format!("{kind}, {how}"));
        }
        checked += 1;
    }
    assert!(
        checked > 0,
        "no kind held with a pause and scaled by replicas"
    );
}

/// An owner reference to a missing owner would have the garbage collector delete the
/// workload; a finalizer would block its deletion.
#[test]
fn other_metadata_changes_are_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let owned = with(job_write(&old), |o| {
            set(
                o,
                "/metadata/ownerReferences",
                json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "gone",
                        "uid": "00000000-0000-4000-8000-000000000000"}]),
            )
        });
        assert_denied(&old, &owned, &["metadata.ownerReferences"], kind);
        let finalized = with(old.clone(), |o| {
            set(o, "/metadata/finalizers", json!(["example.com/keep"]))
        });
        assert_denied(&old, &finalized, &["metadata.finalizers"], kind);
    }
}

#[test]
fn the_message_names_the_workload() {
    let kind = kinds().last().expect("a kind");
    let old = held_workload(kind);
    let stored = with(old.clone(), |o| {
        set(o, "/metadata/labels/team", json!("payments"))
    });
    let Verdict::Denied(message) = verdict(&old, &stored) else {
        panic!("allowed");
    };
    let resource = restage_gate::workload::of(
        old["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/'))
            .map_or("", |(g, _)| g),
        kind.kind(),
    )
    .expect("a kind the policy holds")
    .declared()
    .resource;
    let name = format!(
        "{resource} {}/{}",
        old["metadata"]["namespace"].as_str().expect("namespace"),
        old["metadata"]["name"].as_str().expect("name")
    );
    assert!(
        message.contains(&format!("this write to {name} also changes label team")),
        "{message}"
    );
}

#[test]
fn the_instants_are_inside_and_outside_the_window() {
    let saturday = 5;
    for (instant, inside) in [(IN_WINDOW, true), (OUTSIDE_WINDOWS, false)] {
        assert_eq!(instant.weekday(), saturday);
        let minute = instant.minute_of_day();
        assert_eq!((2 * 60..4 * 60).contains(&minute), inside, "{instant:?}");
    }
}

/// Whatever control a workload ran with, restage-gate's release in a window restores it, and
/// the policy lets exactly that through.
#[test]
fn restage_gates_release_of_each_remembered_control_is_allowed() {
    let mut restored: Vec<String> = Vec::new();
    for kind in kinds() {
        let mut own = 0;
        for control in original_controls().into_iter().filter(|c| takes(kind, c)) {
            let old = held_by_restage_gate(kind, Some(&control));
            let stored = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
            assert_eq!(markers_on(&stored), Vec::<String>::new(), "{kind}");
            assert_eq!(
                stored.pointer(&control_path(kind)),
                Some(&control),
                "{kind}: the remembered control restored"
            );
            assert_eq!(
                verdict(&old, &stored),
                Verdict::Allowed,
                "{kind}: {control}"
            );
            restored.push(control.to_string());
            own += 1;
        }
        assert!(own > 0, "{kind}: no control of its own among the originals");
    }
    for value in ["\"partition\":2", "\"25%\""] {
        assert!(
            restored.iter().any(|c| c.contains(value)),
            "no kind restores a control with {value}: {restored:?}"
        );
    }
}

/// A workload that ran without a control is held remembering the API default, which the
/// release restores.
#[test]
fn restage_gates_release_of_a_control_that_was_absent_restores_the_default_and_is_allowed() {
    for kind in kinds() {
        let old = held_by_restage_gate(kind, None);
        let stored = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        assert_eq!(
            stored.pointer(&control_path(kind)),
            Some(&default_control(kind)),
            "{kind}"
        );
        assert_eq!(verdict(&old, &stored), Verdict::Allowed, "{kind}");
    }
}

/// The members the policy declares the API server fills in, by kind: (key, member, value).
fn filled_members(kind: &'static dyn Workload) -> Vec<(String, String, Value)> {
    let policy = AdmissionPolicy::of_manifest();
    let old = held_workload(kind);
    let filled = policy.variable(&job_request(&old, &old), "filledMembers");
    let mut out = Vec::new();
    for (key, members) in filled.as_object().expect("a map") {
        for (member, value) in members.as_object().expect("a map") {
            let value = serde_json::from_str(value.as_str().expect("JSON")).expect("JSON");
            out.push((key.clone(), member.clone(), value));
        }
    }
    out
}

/// The API server defaults the stored object again after restage-gate's answer: a control
/// remembered without a member it fills in (a StatefulSet's `maxUnavailable`, held before the
/// cluster defaulted it) is stored with the member.
#[test]
fn a_release_stored_with_members_the_api_server_fills_in_is_allowed() {
    let mut filled_in = 0;
    for kind in kinds() {
        let old = held_workload(kind);
        let released = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        for (key, member, value) in filled_members(kind) {
            let path = format!("{}/{key}/{member}", control_path(kind));
            if released.pointer(&path).is_some() {
                continue;
            }
            let stored = with(released.clone(), |o| set(o, &path, value));
            assert_eq!(verdict(&old, &stored), Verdict::Allowed, "{kind}: {path}");
            filled_in += 1;
        }
    }
    assert!(
        filled_in > 0,
        "no remembered control lacks a member filled in"
    );
}

/// Only a member's own default may be filled in, and only where the remembered control does
/// not name the member.
#[test]
fn a_member_filled_in_at_another_value_or_over_a_remembered_one_is_denied() {
    let mut checked = 0;
    for kind in kinds() {
        let old = held_workload(kind);
        let released = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        for (key, member, value) in filled_members(kind) {
            let path = format!("{}/{key}/{member}", control_path(kind));
            let other = json!(value.as_i64().expect("an integer") + 1);
            if released.pointer(&path).is_none() {
                let stored = with(released.clone(), |o| set(o, &path, other.clone()));
                assert_denied(&old, &stored, &as_strs(&wrong_control_named(kind)), kind);
                checked += 1;
            }
            let remembered = with(default_control(kind), |c| {
                set(c, &format!("/{key}/{member}"), other.clone())
            });
            if !takes(kind, &remembered) {
                continue;
            }
            let old = held_by_restage_gate(kind, Some(&remembered));
            let stored = with(
                through_restage_gate(&old, &job_write(&old), IN_WINDOW),
                |o| set(o, &path, value.clone()),
            );
            assert_denied(&old, &stored, &as_strs(&wrong_control_named(kind)), kind);
            checked += 1;
        }
    }
    assert!(checked > 0, "no kind has a member the API server fills in");
}

/// A workload labelled held by hand has nothing remembered: restage-gate's release leaves a
/// control that lets pods roll as it is, and restores the default over one that does not.
#[test]
fn a_release_of_a_workload_labelled_held_by_hand_is_allowed() {
    for kind in kinds() {
        let originals = original_controls().into_iter().filter(|c| takes(kind, c));
        for control in originals.map(Some).chain([None, Some(held_control(kind))]) {
            let path = control_path(kind);
            let old = with(unbound(kind), |o| {
                match &control {
                    Some(control) => set(o, &path, control.clone()),
                    None => remove(o, &path),
                }
                set(o, &label_path(HELD_LABEL), json!("true"));
            });
            let stored = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
            assert!(!is_held(&stored), "{kind}: released");
            let rolls = control.as_ref().filter(|c| **c != held_control(kind));
            let want = rolls.cloned().unwrap_or_else(|| default_control(kind));
            assert_eq!(stored.pointer(&path), Some(&want), "{kind}: {control:?}");
            assert_eq!(
                verdict(&old, &stored),
                Verdict::Allowed,
                "{kind}: {control:?}"
            );
        }
    }
}

#[test]
fn a_release_that_changes_the_control_of_a_workload_labelled_held_by_hand_is_denied() {
    let mut checked = 0;
    for kind in kinds() {
        let path = control_path(kind);
        let default = default_control(kind);
        let originals = original_controls().into_iter().filter(|c| takes(kind, c));
        for control in originals.filter(|c| *c != default) {
            let old = with(unbound(kind), |o| {
                set(o, &path, control.clone());
                set(o, &label_path(HELD_LABEL), json!("true"));
            });
            let named = [control_field(kind), format!("label {HELD_LABEL}")];
            assert_stolen_token_denied(kind, &old, &default, &named, |o| {
                set(o, &path, default.clone())
            });
            checked += 1;
        }
    }
    assert!(
        checked > 0,
        "no kind runs with a control other than its default"
    );
}

/// Every pod of the workload down at once, on a kind whose control takes `maxUnavailable`.
#[test]
fn a_release_with_max_unavailable_100_percent_is_denied() {
    let mut checked = 0;
    for kind in kinds() {
        let all_at_once = with(default_control(kind), |c| {
            if c.is_object() {
                set(c, "/rollingUpdate/maxUnavailable", json!("100%"));
            }
        });
        if !all_at_once.is_object() || !takes(kind, &all_at_once) {
            continue;
        }
        let old = held_workload(kind);
        assert_stolen_token_denied(kind, &old, &all_at_once, &wrong_control_named(kind), |o| {
            set(o, &control_path(kind), all_at_once.clone())
        });
        checked += 1;
    }
    assert!(
        checked >= 2,
        "kinds whose control takes maxUnavailable: {checked}"
    );
}

/// The strategy of a kind whose control takes a partition, as restage-gate remembers it.
fn partitioned(partition: u64) -> Value {
    json!({"type": "RollingUpdate", "rollingUpdate": {"partition": partition}})
}

/// A partition keeps the pods below it on the old template; releasing to partition 0 rolls
/// them all.
#[test]
fn a_release_to_partition_0_of_a_strategy_remembered_with_partition_2_is_denied() {
    let mut checked = 0;
    for kind in kinds().filter(|k| takes(*k, &partitioned(2))) {
        let old = held_by_restage_gate(kind, Some(&partitioned(2)));
        let all = partitioned(0);
        assert_stolen_token_denied(kind, &old, &all, &wrong_control_named(kind), |o| {
            set(o, &control_path(kind), all.clone())
        });
        checked += 1;
    }
    assert!(checked > 0, "no kind takes a partition");
}

#[test]
fn a_release_that_drops_the_remembered_partition_is_denied() {
    let mut checked = 0;
    for kind in kinds().filter(|k| takes(*k, &partitioned(2))) {
        let old = held_by_restage_gate(kind, Some(&partitioned(2)));
        for without in [
            json!({"type": "RollingUpdate"}),
            json!({"type": "RollingUpdate", "rollingUpdate": {}}),
        ] {
            assert_stolen_token_denied(kind, &old, &without, &wrong_control_named(kind), |o| {
                set(o, &control_path(kind), without.clone())
            });
        }
        checked += 1;
    }
    assert!(checked > 0, "no kind takes a partition");
}

/// A key the policy does not write the control's JSON with would go unseen: refused.
#[test]
fn a_release_with_a_control_key_the_policy_does_not_know_is_denied() {
    let mut checked = 0;
    for kind in kinds() {
        let default = default_control(kind);
        if !default.is_object() {
            continue;
        }
        for unknown in ["/surge", "/rollingUpdate/surge"] {
            let control = with(default.clone(), |c| set(c, unknown, json!(1)));
            let old = held_workload(kind);
            assert_stolen_token_denied(kind, &old, &control, &wrong_control_named(kind), |o| {
                set(o, &control_path(kind), control.clone())
            });
        }
        checked += 1;
    }
    assert!(checked > 0, "no kind's control is an object");
}

/// A release leaves no marker: with one kept, the control restored is refused, and so is every
/// marker removed.
#[test]
fn a_release_that_keeps_a_marker_is_denied() {
    for kind in kinds() {
        let old = held_workload(kind);
        let released = through_restage_gate(&old, &job_write(&old), IN_WINDOW);
        for kept in removed_markers(kind) {
            let (map, key) = kept.split_once(' ').expect("label or annotation KEY");
            let pointer = format!("/metadata/{map}s/{}", key.replace('/', "~1"));
            let value = old.pointer(&pointer).expect("a marker of the hold").clone();
            let stored = with(released.clone(), |o| set(o, &pointer, value));
            let named: Vec<String> = wrong_control_named(kind)
                .into_iter()
                .filter(|n| *n != kept)
                .collect();
            assert_denied(&old, &stored, &as_strs(&named), kind);
        }
    }
}
