//! `make check-settings POLICY=FILE` (or `VALUES=FILE`, on the chart's rendering): the settings
//! of every Kubewarden policy in a manifest file, checked by the built module before the policy
//! server sees them. A policy server does not start with a policy whose settings its module
//! refuses (docs/install.md, "Check settings").

use std::io::Write;
use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};

use crate::Runner;

/// The kinds of document that run a policy module with `spec.settings`; other documents of a
/// file (a CronJob, RBAC) are not checked.
const POLICY_KINDS: [&str; 2] = ["ClusterAdmissionPolicy", "AdmissionPolicy"];
const POLICY_API_GROUP: &str = "policies.kubewarden.io/";

/// A policy of a manifest file and its settings, as the policy server hands them to the module.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// `ClusterAdmissionPolicy restage-gate`, `AdmissionPolicy apps/restage-gate`.
    pub name: String,
    /// `spec.settings`, `{}` when it has none.
    pub settings: Value,
}

/// Every policy of the YAML documents in `text` (from `file`), in order.
pub fn policies(file: &str, text: &str) -> Result<Vec<Policy>, String> {
    let mut found = Vec::new();
    for (n, document) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let document = Value::deserialize(document)
            .map_err(|e| format!("{file}: document {}: not YAML: {e}", n + 1))?;
        let kind = document["kind"].as_str().unwrap_or_default();
        let api_version = document["apiVersion"].as_str().unwrap_or_default();
        if !POLICY_KINDS.contains(&kind) || !api_version.starts_with(POLICY_API_GROUP) {
            continue;
        }
        let metadata = &document["metadata"];
        let name = match (metadata["namespace"].as_str(), metadata["name"].as_str()) {
            (_, None) => format!("{kind} (document {}, without metadata.name)", n + 1),
            (Some(namespace), Some(name)) => format!("{kind} {namespace}/{name}"),
            (None, Some(name)) => format!("{kind} {name}"),
        };
        let settings = match &document["spec"]["settings"] {
            Value::Null => json!({}),
            settings => settings.clone(),
        };
        found.push(Policy { name, settings });
    }
    Ok(found)
}

/// Checks the settings of every policy in `file`, one line each on `out`: `ok`, or the module's
/// refusal, which names the field and the value. kwctl evaluates `request` on its way, the
/// interpreter does not need it. An error when the module refuses any, or `file` has no policy.
pub fn check(
    runner: &Runner,
    file: &Path,
    request: &Path,
    out: &mut impl Write,
) -> Result<(), String> {
    let shown = file.display().to_string();
    let text = std::fs::read_to_string(file).map_err(|e| format!("{shown}: {e}"))?;
    let policies = policies(&shown, &text)?;
    if policies.is_empty() {
        return Err(format!(
            "{shown}: no {} in it, so no settings to check; give the file that defines the policy",
            POLICY_KINDS.join(" or ")
        ));
    }
    let mut refused = 0;
    for policy in &policies {
        let verdict = match runner.validate_settings(&policy.settings, request)? {
            None => "ok".to_string(),
            Some(message) => {
                refused += 1;
                message
            }
        };
        writeln!(out, "{shown}: {}: {verdict}", policy.name).map_err(|e| e.to_string())?;
    }
    match refused {
        0 => Ok(()),
        _ => Err(format!(
            "the module refuses the settings of {refused} of the {} policies in {shown}: a policy \
             server would not start with them (docs/install.md, \"Check settings\"); fix the settings \
             before applying {shown}",
            policies.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_policy_document_is_read_with_its_settings_and_other_documents_are_skipped() {
        let text = r#"
# a comment before the first document
apiVersion: policies.kubewarden.io/v1
kind: ClusterAdmissionPolicy
metadata:
  name: restage-gate
spec:
  settings:
    mode: defer
    maintenanceWindows:
      - days: [Sat, Sun]
        start: "02:00"
        end: "04:00"
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: restage-gate-window-release
spec:
  settings: {mode: later}
---
apiVersion: policies.kubewarden.io/v1
kind: AdmissionPolicy
metadata:
  name: restage-gate
  namespace: apps
spec:
  module: registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0
---
"#;
        let found = policies("p.yaml", text).expect("YAML");
        assert_eq!(
            found,
            [
                Policy {
                    name: "ClusterAdmissionPolicy restage-gate".into(),
                    settings: json!({"mode": "defer", "maintenanceWindows": [
                        {"days": ["Sat", "Sun"], "start": "02:00", "end": "04:00"}]}),
                },
                Policy {
                    name: "AdmissionPolicy apps/restage-gate".into(),
                    settings: json!({}),
                },
            ]
        );
    }

    #[test]
    fn a_file_that_is_not_yaml_is_an_error_naming_it() {
        let error = policies("p.yaml", "kind: [unclosed").expect_err("not YAML");
        assert!(error.starts_with("p.yaml: document 1: not YAML"), "{error}");
    }
}
