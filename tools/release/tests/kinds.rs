//! The kinds the module holds (`restage_gate::workload::KINDS`) are the kinds the project's
//! files name: every list `make kinds` writes (`restage_gate_release::kinds`) is the table's,
//! the webhook rules of `metadata.yml`, of every install manifest and of `artifacthub-pkg.yml`
//! read as Kubernetes reads them, the README's table of kinds and the design notes' rows. A
//! kind added to the table and forgotten in a file, or the other way round, fails here.

use std::collections::BTreeSet;
use std::path::Path;

use restage_gate::markers::{
    HELD_LABEL, HELD_SINCE_ANNOTATION, PENDING_ANNOTATION, RELEASE_ANNOTATION,
};
use restage_gate::workload::kinds;
use restage_gate_release::kinds::{self as generated, HeldKind, Markers};
use restage_gate_release::manifests::cluster_policies;
use restage_gate_release::repository::{self, root};
use serde_json::{json, Value};

/// The kinds table, as the generated files need it.
fn held() -> Vec<HeldKind> {
    kinds()
        .map(|w| {
            let k = w.declared();
            HeldKind {
                group: k.group.into(),
                version: k.version.into(),
                kind: k.kind.into(),
                resource: k.resource.into(),
                control: w.control_path().iter().map(|p| p.to_string()).collect(),
                held: w.held_control(),
                default: w.default_control(),
                remembered: w.remembered_annotation().into(),
            }
        })
        .collect()
}

fn markers() -> Markers {
    Markers {
        held_label: HELD_LABEL.into(),
        annotations: [
            HELD_SINCE_ANNOTATION,
            PENDING_ANNOTATION,
            RELEASE_ANNOTATION,
        ]
        .map(String::from)
        .to_vec(),
        release: RELEASE_ANNOTATION.into(),
    }
}

/// `make kinds` runs this test with `BLESS` set: it writes what it would check.
#[test]
fn every_generated_kind_list_is_the_kinds_tables() {
    let files = generated::generate(&root(), &held(), &markers()).unwrap_or_else(|e| panic!("{e}"));
    let mut stale = Vec::new();
    for f in files.iter().filter(|f| f.now != f.wanted) {
        if repository::bless() {
            std::fs::write(root().join(f.file), &f.wanted)
                .unwrap_or_else(|e| panic!("{}: {e}", f.file));
        } else {
            stale.push(f.file);
        }
    }
    assert!(
        stale.is_empty(),
        "{} name other kinds than restage_gate::workload::KINDS: run `make kinds`",
        stale.join(", ")
    );
}

/// `make kinds` run twice writes nothing the second time.
#[test]
fn generating_the_generated_files_again_changes_nothing() {
    let dir = std::env::temp_dir().join(format!("restage-gate-kinds-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("docs")).expect("temp dir");
    let once = generated::generate(&root(), &held(), &markers()).expect("generated");
    for f in &once {
        std::fs::write(dir.join(f.file), &f.wanted).expect("write");
    }
    std::fs::copy(
        root().join("questions-ui.yml"),
        dir.join("questions-ui.yml"),
    )
    .expect("copy");
    let twice = generated::generate(&dir, &held(), &markers()).expect("generated");
    let _ = std::fs::remove_dir_all(&dir);
    for f in twice {
        assert_eq!(f.now, f.wanted, "{}", f.file);
    }
}

/// A kind of another API group, as Argo Rollouts would be declared.
fn rollout() -> HeldKind {
    HeldKind {
        group: "argoproj.io".into(),
        version: "v1alpha1".into(),
        kind: "Rollout".into(),
        resource: "rollouts".into(),
        control: vec!["spec".into(), "paused".into()],
        held: json!(true),
        default: json!(false),
        remembered: "restage-gate.io/original-rollout-paused".into(),
    }
}

#[test]
fn a_kind_of_another_group_gets_its_own_rule_and_uninstall_commands_in_every_file() {
    let mut table = held();
    table.push(rollout());
    let files = generated::generate(&root(), &table, &markers()).expect("generated");
    for f in &files {
        assert_ne!(f.now, f.wanted, "{}: the new kind is not written", f.file);
    }
    let text = |name: &str| &files.iter().find(|f| f.file == name).expect(name).wanted;
    let metadata: Value = serde_yaml::from_str(text("metadata.yml")).expect("YAML");
    assert_eq!(ruled(&metadata["rules"], "metadata.yml"), declared(&table));
    assert_eq!(
        metadata["rules"].as_array().map(Vec::len),
        Some(2),
        "one rule per group"
    );
    let uninstall = text("docs/uninstall.md");
    for command in [
        "; \\\nif [ -n \"$(kubectl api-resources --api-group=argoproj.io -o name)\" ]; then kubectl annotate rollouts -A",
        "if [ -n \"$(kubectl api-resources --api-group=argoproj.io -o name)\" ]; then kubectl get rollouts -A -l restage-gate.io/held=true -o json",
        "\"argoproj.io/Rollout\": {resource: \"rollouts\", control: [\"spec\", \"paused\"], remembered: \"restage-gate.io/original-rollout-paused\", default: false}",
        "\"restage-gate.io/original-rollout-paused\": null",
    ] {
        assert!(uninstall.contains(command), "{command}\n{uninstall}");
    }
    let window = text("window-release.yaml");
    assert!(
        window.contains("- statefulsets,daemonsets,deployments,rollouts\n"),
        "{window}"
    );
    assert!(
        window.contains("'rollouts': dyn(true)}[request.resource.resource]"),
        "{window}"
    );
    assert!(text("README.md").contains("StatefulSets, DaemonSets, Deployments and Rollouts"));
}

/// (group, version, resource) of every kind in `table`.
fn declared(table: &[HeldKind]) -> BTreeSet<(String, String, String)> {
    table
        .iter()
        .map(|k| (k.group.clone(), k.version.clone(), k.resource.clone()))
        .collect()
}

/// (group, version, resource) of every webhook rule; each rule is for UPDATE only, and no two
/// rules are for one group.
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
    let mut groups = BTreeSet::new();
    for rule in rules
        .as_array()
        .unwrap_or_else(|| panic!("{file}: no rules"))
    {
        assert_eq!(list(rule, "operations"), ["UPDATE"], "{file}: operations");
        for group in list(rule, "apiGroups") {
            assert!(
                groups.insert(group.clone()),
                "{file}: two rules for {group}"
            );
            for version in list(rule, "apiVersions") {
                for resource in list(rule, "resources") {
                    out.insert((group.clone(), version.clone(), resource));
                }
            }
        }
    }
    out
}

fn read(name: &str) -> String {
    repository::read(&root(), name).unwrap_or_else(|e| panic!("{e}"))
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).expect("YAML")
}

#[test]
fn metadata_rules_name_every_kind_held_and_no_other() {
    let metadata = yaml(&read("metadata.yml"));
    assert_eq!(ruled(&metadata["rules"], "metadata.yml"), declared(&held()));
}

#[test]
fn every_policy_of_the_install_manifests_names_every_kind_held_and_no_other() {
    let policies = cluster_policies(Path::new(&root())).expect("the install manifests");
    for p in &policies {
        let name = format!("{}: {}", p.file, p.name());
        assert_eq!(
            ruled(&p.policy["spec"]["rules"], &name),
            declared(&held()),
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
    assert_eq!(ruled(&rules, "artifacthub-pkg.yml"), declared(&held()));
    let named: BTreeSet<String> = annotations["kubewarden/resources"]
        .as_str()
        .expect("resources")
        .split(',')
        .map(|k| k.trim().to_string())
        .collect();
    let table: BTreeSet<String> = held().into_iter().map(|k| k.kind).collect();
    assert_eq!(named, table);
}

#[test]
fn the_readme_table_of_kinds_has_a_row_per_kind_held_as_the_kind_holds_it() {
    assert_eq!(
        generated::kind_table_problems(&read("README.md"), &held()),
        Vec::<String>::new()
    );
    let wrong = read("README.md").replacen("| `paused: true` |", "| `paused: false` |", 1);
    assert_eq!(generated::kind_table_problems(&wrong, &held()).len(), 1);
}

#[test]
fn the_design_notes_have_a_row_for_every_kind_held() {
    let design = read("docs/design.md");
    let section = design
        .split("\n## ")
        .find(|s| s.starts_with("10. Workload kinds"))
        .expect("design.md §10, Workload kinds");
    for k in held() {
        let row = format!("\n| {} |", k.kind);
        assert!(
            section.contains(&row),
            "design.md §10 has no row for {}",
            k.kind
        );
    }
}
