//! The install manifests: the top-level files that hold Kubewarden ClusterAdmissionPolicies
//! (`policy.yaml`, `guard.yaml`, `monitor.yaml`), and `docs/policies.yml`, the same policies for
//! a standalone policy server, which must run the same module with the same settings, mode and
//! permission to mutate. A defer policy mutates and a reject policy does not; a reject policy
//! that refuses (a guard) sees what the defer policy beside it sees, with the same settings.

use std::path::Path;

use serde_json::Value;

use crate::repository;

pub const STANDALONE: &str = "docs/policies.yml";

/// A ClusterAdmissionPolicy and the file it is in.
pub struct ClusterPolicy {
    pub file: String,
    pub policy: Value,
}

impl ClusterPolicy {
    pub fn name(&self) -> &str {
        self.policy["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn spec(&self, field: &str) -> &Value {
        &self.policy["spec"][field]
    }

    /// `settings.mode`, the module's default (`defer`) when it is left out.
    fn mode(&self) -> &str {
        self.spec("settings")["mode"].as_str().unwrap_or("defer")
    }

    /// The settings other than `mode`.
    fn settings_but_mode(&self) -> Value {
        let mut settings = self.spec("settings").clone();
        if let Some(s) = settings.as_object_mut() {
            s.remove("mode");
        }
        match settings {
            Value::Object(s) if s.is_empty() => Value::Null,
            other => other,
        }
    }
}

/// Every ClusterAdmissionPolicy of the top-level YAML files under `root`, by file name.
pub fn cluster_policies(root: &Path) -> Result<Vec<ClusterPolicy>, String> {
    let entries = std::fs::read_dir(root).map_err(|e| format!("{}: {e}", root.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let text = repository::read(root, &name)?;
        for policy in repository::yaml_documents(&name, &text)? {
            if policy["kind"] == "ClusterAdmissionPolicy" {
                out.push(ClusterPolicy {
                    file: name.clone(),
                    policy,
                });
            }
        }
    }
    Ok(out)
}

/// Where the standalone policies differ from the ClusterAdmissionPolicies, as
/// "file: policy id: what differs".
pub fn standalone_disagreements(
    cluster: &[ClusterPolicy],
    policies_yml: &str,
) -> Result<Vec<String>, String> {
    let standalone = repository::yaml(STANDALONE, policies_yml)?;
    let standalone = standalone
        .as_object()
        .ok_or_else(|| format!("{STANDALONE}: not a map of policy ids to policies"))?;
    let mut out = Vec::new();
    for policy in cluster {
        let (id, file) = (policy.name(), &policy.file);
        let Some(entry) = standalone.get(id) else {
            out.push(format!(
                "{STANDALONE}: no policy {id}, which {file} defines"
            ));
            continue;
        };
        // A field left out means policy-server's default (protect, not mutating).
        let or = |v: &Value, default: Value| if v.is_null() { default } else { v.clone() };
        let protect = || Value::from("protect");
        let pairs = [
            (
                "module",
                entry["module"].clone(),
                "spec.module",
                policy.spec("module").clone(),
            ),
            (
                "settings",
                entry["settings"].clone(),
                "spec.settings",
                policy.spec("settings").clone(),
            ),
            (
                "policyMode",
                or(&entry["policyMode"], protect()),
                "spec.mode",
                or(policy.spec("mode"), protect()),
            ),
            (
                "allowedToMutate",
                or(&entry["allowedToMutate"], false.into()),
                "spec.mutating",
                or(policy.spec("mutating"), false.into()),
            ),
        ];
        for (field, value, cluster_field, want) in pairs {
            if value != want {
                out.push(format!(
                    "{STANDALONE}: {id}: {field} is {value}, {file}'s {cluster_field} is {want}; make them agree"
                ));
            }
        }
    }
    for id in standalone.keys() {
        if !cluster.iter().any(|p| p.name() == id.as_str()) {
            out.push(format!(
                "{STANDALONE}: {id} is not a ClusterAdmissionPolicy of the install manifests; the example runs those policies"
            ));
        }
    }
    Ok(out)
}

/// Policies deployed against their mode, and guards that do not see what the defer policy
/// sees, as "file: policy: what is wrong".
pub fn deployment_disagreements(cluster: &[ClusterPolicy]) -> Vec<String> {
    let mut out = Vec::new();
    for p in cluster {
        let (file, name, mode) = (&p.file, p.name(), p.mode());
        let mutating = p.spec("mutating") == &Value::Bool(true);
        match (mode, mutating) {
            ("defer", false) => out.push(format!(
                "{file}: {name}: mode defer needs spec.mutating: true (holding the rollout is a mutation)"
            )),
            ("reject", true) => out.push(format!(
                "{file}: {name}: mode reject is deployed with spec.mutating: false, to see the object after every mutating webhook"
            )),
            _ => {}
        }
    }
    let defer: Vec<&ClusterPolicy> = cluster.iter().filter(|p| p.mode() == "defer").collect();
    let guards = cluster
        .iter()
        .filter(|p| p.mode() == "reject" && p.spec("mode").as_str() != Some("monitor"));
    for guard in guards {
        let (file, name) = (&guard.file, guard.name());
        let [beside] = defer.as_slice() else {
            out.push(format!(
                "{file}: {name}: a reject policy in protect mode guards the defer policy, and the manifests define {} of them",
                defer.len()
            ));
            continue;
        };
        let same = |field: &str| guard.spec(field) == beside.spec(field);
        for field in ["rules", "namespaceSelector", "objectSelector"] {
            if !same(field) {
                out.push(format!(
                    "{file}: {name}: spec.{field} differs from {}'s ({}); a guard sees the writes the defer policy sees",
                    beside.name(),
                    beside.file
                ));
            }
        }
        if guard.settings_but_mode() != beside.settings_but_mode() {
            out.push(format!(
                "{file}: {name}: settings other than mode differ from {}'s ({}); with other windows the guard refuses what the defer policy lets roll",
                beside.name(),
                beside.file
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::root;

    fn shipped() -> Vec<ClusterPolicy> {
        cluster_policies(&root()).expect("the install manifests")
    }

    fn disagreements_after(edit: impl Fn(&str) -> String) -> Vec<String> {
        let policies_yml = repository::read(&root(), STANDALONE).expect("project file");
        standalone_disagreements(&shipped(), &edit(&policies_yml)).expect("YAML")
    }

    fn edited(file: &str, edit: impl Fn(&str) -> String) -> Vec<ClusterPolicy> {
        let mut policies = shipped();
        let text = edit(&repository::read(&root(), file).expect("project file"));
        let mut documents = repository::yaml_documents(file, &text)
            .expect("YAML")
            .into_iter();
        for p in policies.iter_mut().filter(|p| p.file == file) {
            p.policy = documents.next().expect("as many policies");
        }
        policies
    }

    #[test]
    fn the_install_manifests_are_the_three_setups() {
        let found: Vec<(String, String, String)> = shipped()
            .iter()
            .map(|p| (p.file.clone(), p.name().to_string(), p.mode().to_string()))
            .collect();
        let want = [
            ("guard.yaml", "restage-gate-guard", "reject"),
            ("monitor.yaml", "restage-gate-monitor", "reject"),
            ("policy.yaml", "restage-gate", "defer"),
        ]
        .map(|(f, n, m)| (f.to_string(), n.to_string(), m.to_string()));
        assert_eq!(found, want);
    }

    #[test]
    fn the_standalone_example_runs_the_policies_of_the_install_manifests() {
        assert_eq!(disagreements_after(str::to_string), Vec::<String>::new());
    }

    #[test]
    fn each_difference_from_the_install_manifests_is_named() {
        let cases = [
            (
                ("\n  allowedToMutate: true", "\n  allowedToMutate: false"),
                "docs/policies.yml: restage-gate: allowedToMutate is false, policy.yaml's spec.mutating is true; make them agree",
            ),
            (
                ("policyMode: monitor\n  allowedToMutate: false\n  settings:\n    mode: reject", "policyMode: monitor\n  allowedToMutate: false\n  settings:\n    mode: defer"),
                "docs/policies.yml: restage-gate-monitor: settings is {\"mode\":\"defer\"}, monitor.yaml's spec.settings is {\"mode\":\"reject\"}; make them agree",
            ),
            (
                ("policyMode: monitor", "policyMode: protect"),
                "docs/policies.yml: restage-gate-monitor: policyMode is \"protect\", monitor.yaml's spec.mode is \"monitor\"; make them agree",
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
            disagreements_after(|t| t.replacen("restage-gate-guard:", "guard:", 1)),
            [
                "docs/policies.yml: no policy restage-gate-guard, which guard.yaml defines",
                "docs/policies.yml: guard is not a ClusterAdmissionPolicy of the install manifests; the example runs those policies",
            ]
        );
    }

    #[test]
    fn the_shipped_policies_are_deployed_as_their_modes_need() {
        assert_eq!(deployment_disagreements(&shipped()), Vec::<String>::new());
    }

    #[test]
    fn a_policy_deployed_against_its_mode_is_named() {
        let mutating_guard = edited("guard.yaml", |t| {
            t.replacen("mutating: false", "mutating: true", 1)
        });
        assert_eq!(
            deployment_disagreements(&mutating_guard),
            ["guard.yaml: restage-gate-guard: mode reject is deployed with spec.mutating: false, to see the object after every mutating webhook"]
        );
        let validating_defer = edited("policy.yaml", |t| {
            t.replacen("mutating: true", "mutating: false", 1)
        });
        assert_eq!(
            deployment_disagreements(&validating_defer),
            ["policy.yaml: restage-gate: mode defer needs spec.mutating: true (holding the rollout is a mutation)"]
        );
    }

    #[test]
    fn a_guard_that_sees_other_writes_or_windows_than_the_defer_policy_is_named() {
        let window = "    maintenanceWindows:\n      - days: [Sat]\n        start: \"02:00\"\n        end: \"04:00\"\n";
        let with_window = edited("policy.yaml", |t| {
            t.replacen(
                "    mode: defer\n",
                &format!("    mode: defer\n{window}"),
                1,
            )
        });
        assert_eq!(
            deployment_disagreements(&with_window),
            ["guard.yaml: restage-gate-guard: settings other than mode differ from restage-gate's (policy.yaml); with other windows the guard refuses what the defer policy lets roll"]
        );
        let selected = edited("guard.yaml", |t| {
            t.replacen(
                "  settings:",
                "  objectSelector:\n    matchExpressions:\n      - key: korifi.cloudfoundry.org/app-guid\n        operator: Exists\n  settings:",
                1,
            )
        });
        assert_eq!(
            deployment_disagreements(&selected),
            ["guard.yaml: restage-gate-guard: spec.objectSelector differs from restage-gate's (policy.yaml); a guard sees the writes the defer policy sees"]
        );
    }

    #[test]
    fn the_install_guide_names_the_endpoint_the_example_answers_on() {
        let guide = repository::read(&root(), "docs/install.md").expect("docs/install.md");
        assert!(guide.contains("/validate/restage-gate"));
        assert!(guide.contains(STANDALONE));
    }
}
