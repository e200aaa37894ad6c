//! A reference for the fast path, for tests and the differential fuzz target only: the same
//! request decided the plain way. The payload is parsed whole into `serde_json::Value`s by a
//! derived reader; two templates are compared by stripping the binding artefacts into copies and
//! comparing those with `==`; the edit is made on the whole parsed object and compared as a
//! tree. None of the reader's, the writer's or the comparison's short cuts is used; what an
//! artefact is and the decision table are the rules' own, checked by their own tests.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::admission::Admission;
use crate::clock::UtcTime;
use crate::decision::decide_with;
use crate::response::{respond, unreadable};
use crate::settings::Settings;
use crate::template::artefacts::{ArtefactRules, Artefacts};
use crate::template::classify::{classify_by, Change};
use crate::view::at;
use crate::workload;

/// An answer, as the fields of the SDK's ValidationResponse.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub accepted: bool,
    pub message: Option<String>,
    pub audit_annotations: Option<BTreeMap<String, String>>,
    pub warnings: Option<Vec<String>>,
    pub mutated_object: Option<Value>,
}

#[derive(Deserialize)]
struct Payload {
    #[serde(default)]
    settings: Value,
    request: Request,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Request {
    operation: Option<String>,
    kind: Option<Kind>,
    sub_resource: Option<String>,
    namespace: Option<String>,
    name: Option<String>,
    object: Value,
    old_object: Value,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Kind {
    group: Option<String>,
    kind: Option<String>,
}

/// The answer to `payload` at `now`; `None` when the payload is not JSON a tree can hold (a
/// number out of range, nesting too deep), which the fast path may still read.
pub fn evaluate(payload: &[u8], now: UtcTime) -> Option<Outcome> {
    serde_json::from_slice::<Value>(payload).ok()?;
    let Ok(Payload { settings, request }) = serde_json::from_slice::<Payload>(payload) else {
        return Some(outcome(
            unreadable("the payload is not a ValidationRequest"),
            None,
        ));
    };
    let settings = match Settings::from_value(&settings) {
        Ok(settings) => settings,
        Err(message) => return Some(outcome(unreadable(&message), None)),
    };
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    let kind = request.kind.unwrap_or_default();
    let (group, kind) = (text(&kind.group), text(&kind.kind));
    let (namespace, name) = (text(&request.namespace), text(&request.name));
    let workload = workload::of(&group, &kind);
    let object = if request.object.is_object() {
        request.object
    } else {
        Value::Null
    };
    let old_object = if request.old_object.is_object() {
        request.old_object
    } else {
        Value::Null
    };
    let template = |o: &Value| -> Option<Value> { at(o, workload?.declared().template).cloned() };
    let (new_template, old_template) = (template(&object), template(&old_object));
    let decision = decide_with(
        &Admission {
            operation: &text(&request.operation),
            group: &group,
            kind: &kind,
            sub_resource: &text(&request.sub_resource),
            namespace: &namespace,
            name: &name,
            object: &object,
            old_object: &old_object,
            template: new_template.as_ref(),
            old_template: old_template.as_ref(),
        },
        &settings,
        now,
        |old, new| reference_classify(old, new, &settings.artefacts),
    );
    let mut edited = object;
    let (answer, changed) = respond(decision, &mut edited, &namespace, &name);
    Some(outcome(answer, changed.then_some(edited)))
}

fn outcome(answer: raw::Answer, mutated_object: Option<Value>) -> Outcome {
    Outcome {
        accepted: answer.accepted,
        message: answer.message,
        audit_annotations: answer
            .audit_annotations
            .map(|a| a.into_iter().map(|(k, v)| (k.to_string(), v)).collect()),
        warnings: answer.warnings,
        mutated_object,
    }
}

/// The reference template comparison, which the policy's (`template::compare::compare`) is
/// checked against through whole answers: two templates compared the plain way,
/// equal once both are stripped of binding artefacts into copies, or not. What the artefacts
/// are and how a binding change is named are the rules' own (`classify_by`).
pub fn reference_classify(old: &Value, new: &Value, rules: &ArtefactRules) -> Change {
    classify_by(old, new, rules, |a, b, artefacts| {
        strip(a, artefacts) == strip(b, artefacts)
    })
}

/// A copy of a template without binding artefacts. An absent, null or emptied list or map
/// among those that hold artefacts is left out: the projector adds them to templates that had
/// none.
fn strip(template: &Value, artefacts: &Artefacts) -> Value {
    let mut out = template.clone();
    if let Some(Value::Object(meta)) = out.get_mut("metadata") {
        filter_map(meta, "annotations", |k| !artefacts.is_annotation(k));
    }
    if let Some(Value::Object(spec)) = out.get_mut("spec") {
        filter_list(spec, "volumes", |v| !artefacts.is_volume(v));
        for key in ["containers", "initContainers"] {
            if let Some(Value::Array(containers)) = spec.get_mut(key) {
                for container in containers.iter_mut() {
                    if let Value::Object(c) = container {
                        filter_list(c, "env", |e| !artefacts.is_env(e));
                        filter_list(c, "volumeMounts", |m| !artefacts.is_mount(m));
                    }
                }
            }
            filter_list(spec, key, |_| true);
        }
    }
    out
}

fn filter_list(map: &mut Map<String, Value>, key: &str, keep: impl Fn(&Value) -> bool) {
    match map.get_mut(key) {
        Some(Value::Array(items)) => {
            items.retain(|i| keep(i));
            if items.is_empty() {
                map.remove(key);
            }
        }
        Some(Value::Null) => {
            map.remove(key);
        }
        _ => {}
    }
}

fn filter_map(map: &mut Map<String, Value>, key: &str, keep: impl Fn(&str) -> bool) {
    match map.get_mut(key) {
        Some(Value::Object(members)) => {
            members.retain(|k, _| keep(k));
            if members.is_empty() {
                map.remove(key);
            }
        }
        Some(Value::Null) => {
            map.remove(key);
        }
        _ => {}
    }
}
