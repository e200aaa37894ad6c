//! The install manifests: `policy.yaml` (Kubewarden ClusterAdmissionPolicies) and
//! `docs/policies.yml`, the same policies for a standalone policy server, which must run the
//! same module with the same settings, mode and permission to mutate.

use serde_json::Value;

use crate::repository;

pub const STANDALONE: &str = "docs/policies.yml";

/// Where the standalone policies differ from the ClusterAdmissionPolicies of `policy.yaml`, as
/// "file: policy id: what differs".
pub fn standalone_disagreements(
    policy_yaml: &str,
    policies_yml: &str,
) -> Result<Vec<String>, String> {
    let cluster: Vec<Value> = repository::yaml_documents("policy.yaml", policy_yaml)?
        .into_iter()
        .filter(|d| d["kind"] == "ClusterAdmissionPolicy")
        .collect();
    let standalone = repository::yaml(STANDALONE, policies_yml)?;
    let standalone = standalone
        .as_object()
        .ok_or_else(|| format!("{STANDALONE}: not a map of policy ids to policies"))?;
    let mut out = Vec::new();
    for policy in &cluster {
        let id = policy["metadata"]["name"].as_str().unwrap_or_default();
        let Some(entry) = standalone.get(id) else {
            out.push(format!(
                "{STANDALONE}: no policy {id}, which policy.yaml defines"
            ));
            continue;
        };
        let spec = &policy["spec"];
        // A field left out means policy-server's default (protect, not mutating).
        let or = |v: &Value, default: Value| if v.is_null() { default } else { v.clone() };
        let protect = || Value::from("protect");
        let pairs = [
            (
                "module",
                entry["module"].clone(),
                "spec.module",
                spec["module"].clone(),
            ),
            (
                "settings",
                entry["settings"].clone(),
                "spec.settings",
                spec["settings"].clone(),
            ),
            (
                "policyMode",
                or(&entry["policyMode"], protect()),
                "spec.mode",
                or(&spec["mode"], protect()),
            ),
            (
                "allowedToMutate",
                or(&entry["allowedToMutate"], false.into()),
                "spec.mutating",
                or(&spec["mutating"], false.into()),
            ),
        ];
        for (field, value, cluster_field, want) in pairs {
            if value != want {
                out.push(format!(
                    "{STANDALONE}: {id}: {field} is {value}, policy.yaml's {cluster_field} is {want}; make them agree"
                ));
            }
        }
    }
    for id in standalone.keys() {
        if !cluster.iter().any(|p| p["metadata"]["name"] == id.as_str()) {
            out.push(format!(
                "{STANDALONE}: {id} is not a policy of policy.yaml; the example runs those policies"
            ));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::root;

    fn disagreements_after(edit: impl Fn(&str) -> String) -> Vec<String> {
        let read = |name| repository::read(&root(), name).expect("project file");
        standalone_disagreements(&read("policy.yaml"), &edit(&read(STANDALONE))).expect("YAML")
    }

    #[test]
    fn the_standalone_example_runs_the_policies_of_policy_yaml() {
        assert_eq!(disagreements_after(str::to_string), Vec::<String>::new());
    }

    #[test]
    fn each_difference_from_policy_yaml_is_named() {
        let cases = [
            (
                ("\n  allowedToMutate: true", "\n  allowedToMutate: false"),
                "docs/policies.yml: restage-gate: allowedToMutate is false, policy.yaml's spec.mutating is true; make them agree",
            ),
            (
                ("    mode: reject", "    mode: defer"),
                "docs/policies.yml: restage-gate-monitor: settings is {\"mode\":\"defer\"}, policy.yaml's spec.settings is {\"mode\":\"reject\"}; make them agree",
            ),
            (
                ("policyMode: monitor", "policyMode: protect"),
                "docs/policies.yml: restage-gate-monitor: policyMode is \"protect\", policy.yaml's spec.mode is \"monitor\"; make them agree",
            ),
        ];
        for ((from, to), want) in cases {
            assert_eq!(
                disagreements_after(|t| t.replacen(from, to, 1)),
                [want],
                "{from}"
            );
        }
        let retagged = disagreements_after(|t| t.replacen(":v0.", ":v9.", 1));
        assert_eq!(retagged.len(), 1, "{retagged:?}");
        assert!(
            retagged[0].starts_with("docs/policies.yml: restage-gate: module is \"registry://"),
            "{retagged:?}"
        );
        assert_eq!(
            disagreements_after(|t| t.replacen("restage-gate-monitor:", "monitor:", 1)),
            [
                "docs/policies.yml: no policy restage-gate-monitor, which policy.yaml defines",
                "docs/policies.yml: monitor is not a policy of policy.yaml; the example runs those policies",
            ]
        );
    }

    #[test]
    fn the_install_guide_names_the_endpoint_the_example_answers_on() {
        let guide = repository::read(&root(), "docs/install.md").expect("docs/install.md");
        assert!(guide.contains("/validate/restage-gate"));
        assert!(guide.contains(STANDALONE));
    }
}
