//! One line per decision, for people reading a run (`make demo`, `restage-gate-run --summary`).

use crate::admission::Outcome;

/// `01-bind.json   held   6 patch op(s), updateStrategy OnDelete, pending [+orders-db]`, then
/// the message and each warning on lines of their own. The control shown is what holds or rolls
/// the workload: its `updateStrategy` where it has one (the API server defaults it on the kinds
/// held with `OnDelete`), otherwise `paused` (a Deployment's).
pub fn summary_line(name: &str, outcome: &Outcome) -> String {
    let object = &outcome.object;
    let control = match object.pointer("/spec/updateStrategy") {
        Some(strategy) => format!(
            "updateStrategy {}",
            strategy["type"].as_str().unwrap_or("-")
        ),
        None => format!(
            "paused {}",
            object["spec"]["paused"].as_bool().unwrap_or(false)
        ),
    };
    let mut detail = format!("{} patch op(s), {control}", outcome.patch.len());
    for key in ["pending", "released"] {
        if let Some(value) = outcome.audit.get(key) {
            detail.push_str(&format!(", {key} [{value}]"));
        }
    }
    if let Some(message) = &outcome.message {
        detail.push_str(&format!("\n    message: {message}"));
    }
    for warning in &outcome.warnings {
        detail.push_str(&format!("\n    warning: {warning}"));
    }
    format!("{name:<36} {:<10} {detail}", outcome.decision())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_line_names_the_decision_patch_strategy_and_pending_then_message_and_warnings() {
        let request = json!({"object": {"spec": {"updateStrategy": {"type": "RollingUpdate"}}}});
        let held = Outcome::new(
            &request,
            &json!({"accepted": true, "warnings": ["rollout held"],
                "mutated_object": {"spec": {"updateStrategy": {"type": "OnDelete"}}},
                "audit_annotations": {"decision": "held", "pending": "+db"}}),
        );
        let line = summary_line("01-bind.json", &held);
        let mut lines = line.lines();
        let first: Vec<&str> = lines
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(
            first,
            [
                "01-bind.json",
                "held",
                "1",
                "patch",
                "op(s),",
                "updateStrategy",
                "OnDelete,",
                "pending",
                "[+db]"
            ]
        );
        assert_eq!(lines.collect::<Vec<_>>(), ["    warning: rollout held"]);

        let refused = Outcome::new(
            &request,
            &json!({"accepted": false, "message": "restart the app"}),
        );
        assert_eq!(
            summary_line("x.json", &refused).lines().nth(1),
            Some("    message: restart the app")
        );
        assert!(summary_line("x.json", &refused).contains(" rejected "));

        // a workload without an update strategy (a Deployment) shows `paused`
        let deployment = json!({"object": {"spec": {}}});
        let paused = Outcome::new(
            &deployment,
            &json!({"accepted": true, "mutated_object": {"spec": {"paused": true}}}),
        );
        assert!(summary_line("d.json", &paused).contains("1 patch op(s), paused true"));
        let unchanged = Outcome::new(&deployment, &json!({"accepted": true}));
        assert!(summary_line("d.json", &unchanged).contains("0 patch op(s), paused false"));
    }
}
