//! One version: Cargo.toml's. metadata.yml, artifacthub-pkg.yml and the module tags of every
//! install manifest (each top-level file with a ClusterAdmissionPolicy, and the standalone
//! `docs/policies.yml`) must agree with it; `artifacthub-pkg.yml` is generated from
//! metadata.yml and the settings form.

use std::path::Path;

use serde_json::Value;

use crate::metadata;

/// The `version` of the `[package]` table of a Cargo.toml.
pub fn cargo_version(cargo_toml: &str) -> Option<String> {
    let package = cargo_toml.split("\n[").next()?;
    package.lines().find_map(|l| {
        let value = l
            .strip_prefix("version")?
            .trim_start()
            .strip_prefix('=')?
            .trim();
        Some(value.trim_matches('"').to_string())
    })
}

/// The chart's metadata, and its values, whose `module:` names the release.
const CHART: &str = "charts/restage-gate/Chart.yaml";
const CHART_VALUES: &str = "charts/restage-gate/values.yaml";

/// Every place whose version disagrees with Cargo.toml's, as "file: what is wrong".
pub fn disagreements(root: &Path) -> Vec<String> {
    let read = |name: &str| crate::repository::read(root, name);
    let mut out = Vec::new();
    let cargo = match read("Cargo.toml").map(|t| cargo_version(&t)) {
        Ok(Some(v)) => v,
        Ok(None) => return vec!["Cargo.toml: no [package] version".into()],
        Err(e) => return vec![e],
    };
    let tag = format!("v{cargo}");
    match read("metadata.yml").and_then(|t| metadata::read_yaml(&t)) {
        Ok(m) => {
            let v = m["annotations"][metadata::VERSION]
                .as_str()
                .unwrap_or_default();
            if v != cargo {
                out.push(format!("metadata.yml: io.kubewarden.policy.version is {v:?}, Cargo.toml says {cargo:?}"));
            }
        }
        Err(e) => out.push(e),
    }
    match read("artifacthub-pkg.yml").and_then(|t| {
        serde_yaml::from_str::<Value>(&t).map_err(|e| format!("artifacthub-pkg.yml: {e}"))
    }) {
        Ok(pkg) => {
            if pkg["version"].as_str() != Some(cargo.as_str()) {
                out.push(format!(
                    "artifacthub-pkg.yml: version is {}, Cargo.toml says {cargo:?}",
                    pkg["version"]
                ));
            }
            let images = pkg["containersImages"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for image in images.iter().filter_map(|i| i["image"].as_str()) {
                if !image.ends_with(&format!(":{tag}")) {
                    out.push(format!(
                        "artifacthub-pkg.yml: image {image} is not tagged {tag}"
                    ));
                }
            }
        }
        Err(e) => out.push(e),
    }
    // The chart is released with the module: its version and appVersion are the module's.
    match read(CHART)
        .and_then(|t| serde_yaml::from_str::<Value>(&t).map_err(|e| format!("{CHART}: {e}")))
    {
        Ok(chart) => {
            for field in ["version", "appVersion"] {
                if chart[field].as_str() != Some(cargo.as_str()) {
                    out.push(format!(
                        "{CHART}: {field} is {}, Cargo.toml says {cargo:?}",
                        chart[field]
                    ));
                }
            }
        }
        Err(e) => out.push(e),
    }
    let manifests = match crate::manifests::cluster_policies(root) {
        Ok(policies) => {
            let mut files: Vec<String> = policies.into_iter().map(|p| p.file).collect();
            files.dedup();
            files
        }
        Err(e) => {
            out.push(e);
            Vec::new()
        }
    };
    for file in manifests
        .iter()
        .map(String::as_str)
        .chain([crate::manifests::STANDALONE, CHART_VALUES])
    {
        match read(file) {
            Ok(text) => {
                for line in text
                    .lines()
                    .map(str::trim)
                    .filter(|l| l.starts_with("module:"))
                {
                    if !line.ends_with(&format!(":{tag}")) {
                        out.push(format!("{file}: {line} is not tagged {tag}"));
                    }
                }
            }
            Err(e) => out.push(e),
        }
    }
    out
}

/// `artifacthub-pkg.yml` with the fields `kwctl scaffold artifacthub --questions-path` writes,
/// from metadata.yml and the Rancher UI's settings form (`questions-ui.yml`, carried verbatim
/// in the `kubewarden/questions-ui` annotation). `created_at` keeps a release's date stable
/// across regenerations.
pub fn artifacthub_pkg(
    metadata: &Value,
    questions: &str,
    created_at: &str,
) -> Result<String, String> {
    crate::questions::read(questions)?;
    let a = |key: &str| {
        metadata["annotations"][key]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let version = a(metadata::VERSION);
    let oci = format!("{}:v{version}", a("io.kubewarden.policy.ociUrl"));
    let url = a("io.kubewarden.policy.url");
    let (author, email) = match a("io.kubewarden.policy.author").split_once('<') {
        Some((name, rest)) => (
            name.trim().to_string(),
            rest.trim_end_matches('>').trim().to_string(),
        ),
        None => (a("io.kubewarden.policy.author"), String::new()),
    };
    let keywords: String = a("io.artifacthub.keywords")
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .map(|k| format!("- {k}\n"))
        .collect();
    let rules = rules_yaml(&metadata["rules"]);
    let maintainer_email = if email.is_empty() {
        String::new()
    } else {
        format!("\n  email: {email}")
    };
    Ok(format!(
        r#"# Kubewarden Artifacthub Package config
#
# Use this config to submit the policy to https://artifacthub.io.
#
# This config can be saved to its default location with:
#   kwctl scaffold artifacthub > artifacthub-pkg.yml 
version: {version}
name: {name}
displayName: {display}
createdAt: {created_at}
description: {description}
license: {license}
homeURL: {url}
containersImages:
- name: policy
  image: {oci}
keywords:
{keywords}links:
- name: policy
  url: {url}/releases/download/v{version}/policy.wasm
- name: source
  url: {source}
install: |
  The policy can be obtained using [`kwctl`](https://github.com/kubewarden/kwctl):
  ```console
  kwctl pull {oci}
  ```
  Then, generate the policy manifest and tune it to your liking. For example:
  ```console
  kwctl scaffold manifest -t ClusterAdmissionPolicy registry://{oci}
  ```
maintainers:
- name: {author}{maintainer_email}
provider:
  name: kubewarden
recommendations:
- url: https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller
annotations:
{context_aware}  kubewarden/mutation: '{mutating}'
  kubewarden/questions-ui: |
{questions}  kubewarden/resources: {resources}
  kubewarden/rules: |
{rules}"#,
        name = a(metadata::TITLE),
        display = a("io.artifacthub.displayName"),
        description = a("io.kubewarden.policy.description"),
        license = a("io.kubewarden.policy.license"),
        source = a(metadata::SOURCE),
        context_aware = context_aware_resources(&metadata["contextAwareResources"])?,
        mutating = metadata["mutating"].as_bool().unwrap_or(false),
        questions = block(questions),
        resources = a("io.artifacthub.resources"),
    ))
}

/// The `kubewarden/contextAwareResources` annotation as Kubewarden writes it: the resources the
/// policy reads from the cluster, as a YAML list, and no annotation for a policy that reads
/// none (Kubewarden's UI marks a package "Context Aware" whenever the annotation is there).
fn context_aware_resources(resources: &Value) -> Result<String, String> {
    let list = match resources {
        Value::Null => return Ok(String::new()),
        Value::Array(list) if list.is_empty() => return Ok(String::new()),
        Value::Array(list) => list,
        other => {
            return Err(format!(
                "metadata.yml: contextAwareResources is {other}, not a list of {{apiVersion, kind}}"
            ))
        }
    };
    let yaml = serde_yaml::to_string(list).map_err(|e| e.to_string())?;
    Ok(format!(
        "  kubewarden/contextAwareResources: |\n{}",
        block(&yaml)
    ))
}

/// Text as the body of a YAML block scalar under a two-space key: indented by four spaces.
fn block(text: &str) -> String {
    text.trim_end()
        .lines()
        .map(|l| {
            if l.trim().is_empty() {
                "\n".to_string()
            } else {
                format!("    {l}\n")
            }
        })
        .collect()
}

/// Rules as kwctl writes them: the fields in the order of a Kubernetes RuleWithOperations.
fn rules_yaml(rules: &Value) -> String {
    let mut out = String::new();
    for rule in rules.as_array().into_iter().flatten() {
        let mut first = true;
        for field in ["apiGroups", "apiVersions", "resources", "operations"] {
            out.push_str(if first { "    - " } else { "      " });
            first = false;
            out.push_str(&format!("{field}:\n"));
            for v in rule[field].as_array().into_iter().flatten() {
                let v = v.as_str().unwrap_or_default();
                let v = if v.is_empty() || v == "*" {
                    format!("'{v}'")
                } else {
                    v.to_string()
                };
                out.push_str(&format!("      - {v}\n"));
            }
        }
    }
    out
}

/// The `createdAt` of an existing artifacthub-pkg.yml, when it is for the same version.
pub fn existing_created_at(existing: &str, version: &str) -> Option<String> {
    let pkg: Value = serde_yaml::from_str(existing).ok()?;
    if pkg["version"].as_str() != Some(version) {
        return None;
    }
    pkg["createdAt"].as_str().map(str::to_string).or_else(|| {
        existing
            .lines()
            .find_map(|l| l.strip_prefix("createdAt: ").map(str::to_string))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repository::{self, root};

    #[test]
    fn every_file_carries_the_cargo_version() {
        let problems = disagreements(&root());
        assert!(
            problems.is_empty(),
            "versions disagree:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn a_disagreeing_file_is_named() {
        for retagged in [
            "policy.yaml",
            "guard.yaml",
            "monitor.yaml",
            "docs/policies.yml",
            CHART_VALUES,
            CHART,
        ] {
            let dir = std::env::temp_dir().join(format!(
                "restage-gate-versions-{}-{}",
                std::process::id(),
                retagged.replace('/', "-")
            ));
            std::fs::create_dir_all(dir.join("docs")).expect("temp dir");
            std::fs::create_dir_all(dir.join("charts/restage-gate")).expect("temp dir");
            for name in [
                CHART,
                CHART_VALUES,
                "Cargo.toml",
                "metadata.yml",
                "artifacthub-pkg.yml",
                "policy.yaml",
                "guard.yaml",
                "monitor.yaml",
                "docs/policies.yml",
            ] {
                let text = repository::read(&root(), name).expect("project file");
                let text = if name == retagged {
                    text.replacen(":v0.", ":v9.", 1).replacen(
                        "appVersion: \"0.",
                        "appVersion: \"9.",
                        1,
                    )
                } else {
                    text
                };
                std::fs::write(dir.join(name), text).expect("write");
            }
            let problems = disagreements(&dir);
            let _ = std::fs::remove_dir_all(&dir);
            assert_eq!(problems.len(), 1, "{problems:?}");
            let wrong = if retagged == CHART {
                "appVersion is"
            } else {
                "module: registry://"
            };
            assert!(
                problems[0].starts_with(&format!("{retagged}: {wrong}")),
                "{problems:?}"
            );
        }
    }

    fn generated_package() -> (String, String) {
        let read = |name| repository::read(&root(), name).expect("project file");
        let existing = read("artifacthub-pkg.yml");
        let meta = metadata::read_yaml(&read("metadata.yml")).expect("YAML");
        let version = meta["annotations"][metadata::VERSION]
            .as_str()
            .expect("version")
            .to_string();
        let created = existing_created_at(&existing, &version).expect("createdAt");
        let generated =
            artifacthub_pkg(&meta, &read("questions-ui.yml"), &created).expect("generated");
        (generated, existing)
    }

    #[test]
    fn artifacthub_pkg_is_generated_from_metadata_and_questions() {
        let (generated, existing) = generated_package();
        assert!(
            generated == existing,
            "artifacthub-pkg.yml is stale: run `make artifacthub-pkg.yml`\n{generated}"
        );
    }

    #[test]
    fn the_package_carries_the_settings_form() {
        let (generated, _) = generated_package();
        let pkg = repository::yaml("artifacthub-pkg.yml", &generated).expect("YAML");
        let carried = pkg["annotations"]["kubewarden/questions-ui"]
            .as_str()
            .expect("a kubewarden/questions-ui annotation");
        let form = repository::read(&root(), "questions-ui.yml").expect("questions-ui.yml");
        assert_eq!(
            repository::yaml("annotation", carried),
            repository::yaml("questions-ui.yml", &form)
        );
        assert_eq!(pkg["annotations"]["kubewarden/mutation"], "true");
    }

    #[test]
    fn the_package_declares_context_aware_resources_only_when_the_policy_reads_some() {
        let (generated, _) = generated_package();
        let pkg = repository::yaml("artifacthub-pkg.yml", &generated).expect("YAML");
        let annotations = pkg["annotations"].as_object().expect("annotations");
        let keys: Vec<&String> = annotations
            .keys()
            .filter(|k| k.starts_with("kubewarden/contextAware"))
            .collect();
        assert_eq!(keys, Vec::<&String>::new(), "restage-gate reads nothing");

        let mut meta =
            metadata::read_yaml(&repository::read(&root(), "metadata.yml").expect("file"))
                .expect("YAML");
        meta["contextAwareResources"] =
            serde_json::json!([{"apiVersion": "v1", "kind": "Namespace"}]);
        let form = repository::read(&root(), "questions-ui.yml").expect("form");
        let text = artifacthub_pkg(&meta, &form, "2026-01-01T00:00:00Z").expect("package");
        let pkg = repository::yaml("package", &text).expect("YAML");
        let declared = pkg["annotations"]["kubewarden/contextAwareResources"]
            .as_str()
            .expect("the annotation");
        assert_eq!(
            repository::yaml("annotation", declared).expect("YAML"),
            meta["contextAwareResources"]
        );
    }

    #[test]
    fn a_malformed_form_is_not_packaged() {
        let meta = metadata::read_yaml(&repository::read(&root(), "metadata.yml").expect("file"))
            .expect("YAML");
        assert_eq!(
            artifacthub_pkg(&meta, "questions: []", "2026-01-01T00:00:00Z"),
            Err("questions-ui.yml: `questions` must be a non-empty list".into())
        );
    }
}
