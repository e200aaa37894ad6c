//! The ValidatingAdmissionPolicy of `window-release.yaml`, evaluated as the API server evaluates
//! it: its match conditions, then its variables in order (each seeing the earlier ones as
//! `variables.NAME`), then its validations, on `request`, `object` (as stored, after every
//! mutating webhook) and `oldObject`. The objects are the project's fixtures held by the test
//! kit, and what restage-gate answers to the job's write, in a maintenance window and outside
//! every window.
//!
//! The interpreter is cel-rust, not the API server's cel-go: what the expressions use lies in
//! their common part (`has()`, `in` on maps and lists, `startsWith`, `exists`, `filter`, `map`,
//! `size`, `dyn`, map and list equality, and the strings extension's `join`). What only the API
//! server checks, and no test here: each expression type-checked against each matched kind's
//! schema (`dyn(...)` keeps the fields of `spec` and `metadata` out of it), a list or map literal
//! whose elements differ in type refused (the one mixed literal, `heldControl`'s, wraps each
//! value in `dyn()`), and the cost limits. JSON integers are `uint` here and `int` there; the
//! expressions only compare values read from the same objects.

use std::collections::HashMap;
use std::sync::Arc;

use cel::{Context, Env, Program, Value as Cel};
use restage_gate::clock::UtcTime;
use restage_gate::markers::{
    HELD_LABEL, HELD_SINCE_ANNOTATION, MARKER_PREFIX, PENDING_ANNOTATION, RELEASE_ANNOTATION,
    RELEASE_IN_WINDOW,
};
use restage_gate_testkit::admission::{request, validation_request};
use restage_gate_testkit::edit::{set, with};
use restage_gate_testkit::fixtures::{kinds, unbound};
use restage_gate_testkit::hold::{
    control_path, default_control, held, held_control, is_held, markers_on, remembered_annotation,
};
use restage_gate_testkit::kubectl::annotate;
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

fn held_workload(kind: &str) -> Value {
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
fn assert_denied(old: &Value, stored: &Value, changed: &[&str], kind: &str) {
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
        .map(|(_, named)| named)
        .unwrap_or_default();
    let mut named: Vec<&str> = named.split(", ").collect();
    named.sort_unstable();
    let mut want = changed.to_vec();
    want.sort_unstable();
    assert_eq!(named, want, "{kind}: {message}");
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
fn writes_of_any_other_identity_are_not_matched() {
    let policy = AdmissionPolicy::of_manifest();
    for kind in kinds() {
        let old = held_workload(kind);
        let changed = with(old.clone(), |o| {
            set(o, "/metadata/labels/team", json!("payments"))
        });
        for user in [
            "system:serviceaccount:cf:korifi-controllers-controller-manager",
            "system:serviceaccount:default:restage-gate-window-release",
            "system:serviceaccount:kubewarden:restage-gate-window-release-2",
        ] {
            let mut review = job_request(&old, &changed);
            review["userInfo"]["username"] = json!(user);
            assert_eq!(policy.review(&review), Ok(Verdict::NotMatched), "{user}");
        }
    }
}

#[test]
fn the_admission_policy_knows_each_kinds_control_and_its_held_value() {
    let policy = AdmissionPolicy::of_manifest();
    for kind in kinds() {
        let old = held_workload(kind);
        let review = job_request(&old, &old);
        let path = control_path(kind);
        let field = path.strip_prefix("/spec/").expect("a field of spec");
        assert!(!field.contains('/'), "{path}: a field of spec itself");
        assert_eq!(policy.variable(&review, "control"), json!(field), "{kind}");
        assert_eq!(
            policy.variable(&review, "heldControl"),
            held_control(kind),
            "{kind}"
        );
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
        assert_denied(
            &old,
            &stored,
            &[&control.replacen("/spec/", "spec.", 1)],
            kind,
        );
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
        let mut want: Vec<String> = vec![format!("label {HELD_LABEL}")];
        want.extend(
            [
                HELD_SINCE_ANNOTATION,
                PENDING_ANNOTATION,
                remembered_annotation(kind),
            ]
            .map(|a| format!("annotation {a}")),
        );
        let want: Vec<&str> = want.iter().map(String::as_str).collect();
        assert_denied(&old, &stored, &want, kind);
    }
}

/// restage-gate releases whatever the write carries with it; the admission policy refuses the
/// write when that is more than the release.
#[test]
fn a_release_that_also_changes_something_else_is_denied() {
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

        let labelled = with(job_write(&old), |o| {
            set(o, "/metadata/labels/team", json!("payments"))
        });
        let stored = through_restage_gate(&old, &labelled, IN_WINDOW);
        assert!(!is_held(&stored), "{kind}: restage-gate released it");
        assert_denied(&old, &stored, &["label team"], kind);
    }
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
        kind,
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
