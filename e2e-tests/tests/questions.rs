//! The Rancher UI's settings form (`questions-ui.yml`) against the compiled module: a question
//! for every setting the module reads, and defaults and options it accepts.

use restage_gate_e2e::host::policy_under_test;
use restage_gate_e2e::questions::problems;
use restage_gate_release::questions::read;
use restage_gate_release::repository;
use serde_json::{json, Value};

fn project_questions() -> Vec<Value> {
    read(&repository::read(&repository::root(), "questions-ui.yml").expect("questions-ui.yml"))
        .expect("valid questions")
}

#[test]
fn the_form_asks_for_every_setting_with_defaults_the_module_accepts() {
    let found = problems(&project_questions(), policy_under_test()).expect("module answers");
    assert!(found.is_empty(), "questions-ui.yml:\n{}", found.join("\n"));
}

#[test]
fn a_missing_question_a_stray_question_and_refused_defaults_are_each_reported() {
    let mut questions = project_questions();
    questions.retain(|q| q["variable"] != "extraVolumePrefixes");
    for q in &mut questions {
        match q["variable"].as_str() {
            Some("mode") => {
                q["default"] = json!("Defer");
                q["options"] = json!(["Defer", "reject"]);
            }
            Some("maintenanceWindows") => {
                q["sequence_questions"][0]["variable"] = json!("day");
            }
            _ => {}
        }
    }
    let mut found = problems(&questions, policy_under_test()).expect("module answers");
    found.sort();
    let expected = [
        "an entry of maintenanceWindows: field days has no question in questions-ui.yml",
        "an entry of maintenanceWindows: question day is not a field the policy reads (days, end, spreadMinutes, start)",
        "settings: field extraVolumePrefixes has no question in questions-ui.yml",
        "the form's defaults {\"extraAnnotationPrefixes\":[],\"maintenanceWindows\":[],\"mode\":\"Defer\"} is refused: settings.mode: \"Defer\" is not a mode; use \"defer\" or \"reject\"",
        "a new entry of maintenanceWindows {\"maintenanceWindows\":[{\"day\":[\"Sat\",\"Sun\"],\"end\":\"04:00\",\"spreadMinutes\":1,\"start\":\"02:00\"}]} is refused: settings.maintenanceWindows[0].day: unknown field; a window has days, start, end, spreadMinutes",
        "option \"Defer\" of mode {\"mode\":\"Defer\"} is refused: settings.mode: \"Defer\" is not a mode; use \"defer\" or \"reject\"",
    ];
    let mut expected: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    expected.sort();
    assert_eq!(found, expected);
}
