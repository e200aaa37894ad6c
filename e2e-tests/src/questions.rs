//! The settings form of the Rancher UI: `questions-ui.yml`, in the questions format of the
//! Kubewarden policies (`variable`, `label`, `type`, `default`, `options`,
//! `sequence_questions`). The form must offer every setting the policy reads and nothing else,
//! and what it fills in by default must be settings the policy accepts.

use std::collections::BTreeSet;

use restage_gate_evaluation::guest::Guest;
use serde_json::{json, Map, Value};

use crate::host::Module;
use crate::repository;

/// A key no setting has: the module's refusal of it lists the fields it knows.
const PROBE: &str = "restage-gate-unknown-field";

/// The questions of a `questions-ui.yml`, each with what the UI needs to render it.
pub fn read(text: &str) -> Result<Vec<Value>, String> {
    let doc = repository::yaml("questions-ui.yml", text)?;
    let questions = doc["questions"]
        .as_array()
        .filter(|q| !q.is_empty())
        .ok_or("questions-ui.yml: `questions` must be a non-empty list")?;
    for (i, q) in questions.iter().enumerate() {
        let path = format!("questions[{i}]");
        check(q, &path)?;
        for (j, sub) in sequence_questions(q).iter().enumerate() {
            check(sub, &format!("{path}.sequence_questions[{j}]"))?;
        }
    }
    Ok(questions.clone())
}

fn check(q: &Value, path: &str) -> Result<(), String> {
    for key in ["variable", "label", "type"] {
        if q[key].as_str().is_none_or(str::is_empty) {
            return Err(format!(
                "questions-ui.yml: {path}.{key} must be a non-empty string"
            ));
        }
    }
    if q.get("default").is_none() {
        return Err(format!(
            "questions-ui.yml: {path}.default is missing; the form starts from it"
        ));
    }
    if q["description"]
        .as_str()
        .or(q["tooltip"].as_str())
        .is_none()
    {
        return Err(format!(
            "questions-ui.yml: {path} has no help text; give it a description or a tooltip"
        ));
    }
    let kind = q["type"].as_str().unwrap_or_default();
    if kind == "enum"
        && !q["options"]
            .as_array()
            .is_some_and(|o| o.contains(&q["default"]))
    {
        return Err(format!(
            "questions-ui.yml: {path}.options must list the default {}",
            q["default"]
        ));
    }
    if kind.starts_with("sequence[") && sequence_questions(q).is_empty() {
        return Err(format!(
            "questions-ui.yml: {path}.sequence_questions must describe the entries of the list"
        ));
    }
    Ok(())
}

fn sequence_questions(q: &Value) -> &[Value] {
    q["sequence_questions"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

fn variable(q: &Value) -> &str {
    q["variable"].as_str().unwrap_or_default()
}

/// The settings the form starts with: every question at its default.
pub fn defaults(questions: &[Value]) -> Value {
    entry(questions)
}

/// What the form's "Add" button appends to a list of objects: every entry question at its
/// default.
pub fn new_entry(question: &Value) -> Value {
    entry(sequence_questions(question))
}

fn entry(questions: &[Value]) -> Value {
    let fields: Map<String, Value> = questions
        .iter()
        .map(|q| (variable(q).to_string(), q["default"].clone()))
        .collect();
    Value::Object(fields)
}

/// Where the form and the module disagree: a setting without a question, a question for no
/// setting, a default or an option the module refuses.
pub fn problems(questions: &[Value], module: &Module) -> Result<Vec<String>, String> {
    let mut out = coverage("settings", questions, module, &json!({ PROBE: 0 }))?;
    for q in questions
        .iter()
        .filter(|q| !sequence_questions(q).is_empty())
    {
        let probe = json!({ variable(q): [{ PROBE: 0 }] });
        let what = format!("an entry of {}", variable(q));
        out.extend(coverage(&what, sequence_questions(q), module, &probe)?);
    }
    let mut refused = |settings: Value, what: String| -> Result<(), String> {
        if let Some(message) = module.validate_settings(&settings)? {
            out.push(format!("{what} {settings} is refused: {message}"));
        }
        Ok(())
    };
    refused(defaults(questions), "the form's defaults".into())?;
    for q in questions {
        let name = variable(q);
        if !sequence_questions(q).is_empty() {
            refused(
                json!({ name: [new_entry(q)] }),
                format!("a new entry of {name}"),
            )?;
        }
        for option in q["options"].as_array().into_iter().flatten() {
            refused(
                json!({ name: option }),
                format!("option {option} of {name}"),
            )?;
        }
    }
    Ok(out)
}

/// The fields the module knows (read from its refusal of `probe`) against the questions.
fn coverage(
    what: &str,
    questions: &[Value],
    module: &Module,
    probe: &Value,
) -> Result<Vec<String>, String> {
    let message = module
        .validate_settings(probe)?
        .ok_or_else(|| format!("the module accepted the unknown field in {probe}"))?;
    let known: BTreeSet<&str> = message
        .rsplit_once(" are ")
        .or_else(|| message.rsplit_once(" has "))
        .ok_or_else(|| format!("the module's refusal of {probe} lists no fields: {message}"))?
        .1
        .split(", ")
        .collect();
    let asked: BTreeSet<&str> = questions.iter().map(variable).collect();
    let missing = known
        .difference(&asked)
        .map(|f| format!("{what}: field {f} has no question in questions-ui.yml"));
    let reads = known.iter().copied().collect::<Vec<_>>().join(", ");
    let extra = asked
        .difference(&known)
        .map(|v| format!("{what}: question {v} is not a field the policy reads ({reads})"));
    Ok(missing.chain(extra).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project_questions() -> Vec<Value> {
        let text = repository::read(&repository::root(), "questions-ui.yml").expect("file");
        read(&text).expect("valid questions")
    }

    #[test]
    fn the_form_starts_from_each_default() {
        let questions = project_questions();
        let defaults = defaults(&questions);
        assert_eq!(defaults["mode"], "defer");
        assert_eq!(defaults["maintenanceWindows"], json!([]));
        let windows = questions
            .iter()
            .find(|q| variable(q) == "maintenanceWindows")
            .expect("a windows question");
        assert_eq!(
            new_entry(windows),
            json!({"days": ["Sat", "Sun"], "start": "02:00", "end": "04:00"})
        );
    }

    #[test]
    fn malformed_questions_are_refused_with_what_to_fix() {
        let cases = [
            ("questions: []", "questions-ui.yml: `questions` must be a non-empty list"),
            (
                "questions:\n- {variable: mode, label: Mode, type: enum, description: d, options: [defer]}",
                "questions-ui.yml: questions[0].default is missing; the form starts from it",
            ),
            (
                "questions:\n- {variable: mode, label: Mode, type: enum, default: later, options: [defer], tooltip: t}",
                "questions-ui.yml: questions[0].options must list the default \"later\"",
            ),
            (
                "questions:\n- {variable: w, label: W, type: 'sequence[', default: [], tooltip: t}",
                "questions-ui.yml: questions[0].sequence_questions must describe the entries of the list",
            ),
            (
                "questions:\n- {variable: w, label: W, type: 'sequence[', default: [], tooltip: t, sequence_questions: [{variable: days, label: Days, type: 'array[', default: []}]}",
                "questions-ui.yml: questions[0].sequence_questions[0] has no help text; give it a description or a tooltip",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(read(text), Err(want.to_string()), "{text}");
        }
    }
}
