//! The Rancher UI's settings form (`questions-ui.yml`) against the compiled module: the form
//! must offer every setting the policy reads and nothing else, and what it fills in by default
//! must be settings the policy accepts. Reading the form is the release tool's
//! (`restage_gate_release::questions`), which packages it.

use std::collections::BTreeSet;

use restage_gate_evaluation::guest::Guest;
use restage_gate_release::questions::{defaults, new_entry, sequence_questions, variable};
use serde_json::{json, Value};

use crate::host::Module;

/// A key no setting has: the module's refusal of it lists the fields it knows.
const PROBE: &str = "restage-gate-unknown-field";

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
