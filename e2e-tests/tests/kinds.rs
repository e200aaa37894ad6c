//! The kinds the module holds (`restage_gate::workload::KINDS`) are the kinds the project's
//! files name: the webhook rules of `metadata.yml`, of every install manifest and of
//! `artifacthub-pkg.yml`, the Artifact Hub resource list, and the kind table of the design
//! notes. A kind added to the table and forgotten in a file, or the other way round, fails
//! here.

use std::collections::BTreeSet;
use std::path::PathBuf;

use restage_gate::workload::kinds;
use restage_gate_release::manifests::cluster_policies;
use serde_json::Value;

fn read(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// (group, version, resource) of every kind in the table.
fn declared() -> BTreeSet<(String, String, String)> {
    kinds()
        .map(|w| w.declared())
        .map(|k| (k.group.into(), k.version.into(), k.resource.into()))
        .collect()
}

/// (group, version, resource) of every webhook rule; each rule is for UPDATE only.
fn ruled(rules: &Value, file: &str) -> BTreeSet<(String, String, String)> {
    let list = |rule: &Value, key: &str| -> Vec<String> {
        rule[key]
            .as_array()
            .unwrap_or_else(|| panic!("{file}: a rule without {key}"))
            .iter()
            .map(|v| v.as_str().expect("a string").to_string())
            .collect()
    };
    let mut out = BTreeSet::new();
    for rule in rules
        .as_array()
        .unwrap_or_else(|| panic!("{file}: no rules"))
    {
        assert_eq!(list(rule, "operations"), ["UPDATE"], "{file}: operations");
        for group in list(rule, "apiGroups") {
            for version in list(rule, "apiVersions") {
                for resource in list(rule, "resources") {
                    out.insert((group.clone(), version.clone(), resource));
                }
            }
        }
    }
    out
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).expect("YAML")
}

#[test]
fn metadata_rules_name_every_kind_held_and_no_other() {
    let metadata = yaml(&read("metadata.yml"));
    assert_eq!(ruled(&metadata["rules"], "metadata.yml"), declared());
}

#[test]
fn every_policy_of_the_install_manifests_names_every_kind_held_and_no_other() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let policies = cluster_policies(&root).expect("the install manifests");
    for p in &policies {
        let name = format!("{}: {}", p.file, p.name());
        assert_eq!(
            ruled(&p.policy["spec"]["rules"], &name),
            declared(),
            "{name}"
        );
    }
    assert!(
        !policies.is_empty(),
        "no ClusterAdmissionPolicy in the install manifests"
    );
}

#[test]
fn the_artifact_hub_package_names_every_kind_held_and_no_other() {
    let package = yaml(&read("artifacthub-pkg.yml"));
    let annotations = &package["annotations"];
    let rules = yaml(annotations["kubewarden/rules"].as_str().expect("rules"));
    assert_eq!(ruled(&rules, "artifacthub-pkg.yml"), declared());
    let named: BTreeSet<String> = annotations["kubewarden/resources"]
        .as_str()
        .expect("resources")
        .split(',')
        .map(|k| k.trim().to_string())
        .collect();
    let held: BTreeSet<String> = kinds().map(|w| w.kind().to_string()).collect();
    assert_eq!(named, held);
}

#[test]
fn the_design_notes_have_a_row_for_every_kind_held() {
    let design = read("docs/design.md");
    let section = design
        .split("\n## ")
        .find(|s| s.starts_with("10. Workload kinds"))
        .expect("design.md §10, Workload kinds");
    for w in kinds() {
        let row = format!("\n| {} |", w.kind());
        assert!(
            section.contains(&row),
            "design.md §10 has no row for {}",
            w.kind()
        );
    }
}
