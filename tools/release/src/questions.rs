//! The settings form of the Rancher UI: `questions-ui.yml`, in the questions format of the
//! Kubewarden policies (`variable`, `label`, `type`, `default`, `options`,
//! `sequence_questions`): read and checked for what the UI needs, and the settings it fills in.
//! That the module accepts those settings, and that the form asks for every setting it reads,
//! is checked by the e2e suites on the compiled module.

use serde_json::{Map, Value};

use crate::repository;

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

pub fn sequence_questions(q: &Value) -> &[Value] {
    q["sequence_questions"]
        .as_array()
        .map_or(&[], Vec::as_slice)
}

pub fn variable(q: &Value) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
            json!({"days": ["Sat", "Sun"], "start": "02:00", "end": "04:00", "spreadMinutes": 1})
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
