//! The kinds the module holds (`restage_gate::workload::KINDS`) are the kinds the project's
//! files name: every list `make kinds` writes (`restage_gate_release::kinds`) is the table's,
//! the webhook rules of `metadata.yml`, of every install manifest and of `artifacthub-pkg.yml`
//! read as Kubernetes reads them, the README's table of kinds and the design notes' table. A
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
                control_keys: generated::control_keys(&w.default_control(), |c| w.accepts(c)),
                apply_now: w.apply_held_now("NAMESPACE", "NAME"),
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
        held_since: HELD_SINCE_ANNOTATION.into(),
        pending: PENDING_ANNOTATION.into(),
    }
}

/// Writes `f` as the kinds table makes it under `dir`: its text, or no file.
fn write(dir: &Path, f: &generated::Generated) {
    let path = dir.join(&f.file);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", f.file));
    }
    match &f.wanted {
        Some(text) => std::fs::write(&path, text),
        None => std::fs::remove_file(&path),
    }
    .unwrap_or_else(|e| panic!("{}: {e}", f.file));
}

/// `make kinds` runs this test with `BLESS` set: it writes what it would check.
#[test]
fn every_generated_kind_list_is_the_kinds_tables() {
    let files = generated::generate(&root(), &held(), &markers()).unwrap_or_else(|e| panic!("{e}"));
    let mut stale = Vec::new();
    for f in files.iter().filter(|f| f.now != f.wanted) {
        if repository::bless() {
            write(&root(), f);
        } else {
            stale.push(f.file.as_str());
        }
    }
    assert!(
        stale.is_empty(),
        "{} name other kinds than restage_gate::workload::KINDS: run `make kinds`",
        stale.join(", ")
    );
}

/// A scratch copy of what `generate` reads, removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn of(files: &[generated::Generated], name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("restage-gate-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("docs")).expect("temp dir");
        for f in files.iter().filter(|f| f.wanted.is_some()) {
            write(&dir, f);
        }
        std::fs::copy(
            root().join("questions-ui.yml"),
            dir.join("questions-ui.yml"),
        )
        .expect("copy");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `make kinds` run twice writes nothing the second time, with the kinds table and with a kind
/// of a group of custom resources added.
#[test]
fn generating_the_generated_files_again_changes_nothing() {
    let mut with_rollout = held();
    with_rollout.push(widget());
    for (name, table) in [("kinds", held()), ("kinds-crd", with_rollout)] {
        let once = generated::generate(&root(), &table, &markers()).expect("generated");
        let dir = Scratch::of(&once, name);
        let twice = generated::generate(&dir.0, &table, &markers()).expect("generated");
        for f in twice {
            assert_eq!(f.now, f.wanted, "{name}: {}", f.file);
        }
    }
}

/// A made-up kind of a made-up API group of custom resources, held with a pause.
fn widget() -> HeldKind {
    HeldKind {
        group: "example.test".into(),
        version: "v1alpha1".into(),
        kind: "Widget".into(),
        resource: "widgets".into(),
        control: vec!["spec".into(), "paused".into()],
        held: json!(true),
        default: json!(false),
        remembered: "restage-gate.io/original-widget-paused".into(),
        control_keys: Vec::new(),
        apply_now: "kubectl patch widget/NAME -n NAMESPACE --type merge -p {}".into(),
    }
}

/// The admission policy of window-release.yaml writes a released control's JSON with the keys
/// of [`HeldKind::control_keys`]: they are every key restage-gate can restore, those of the
/// kind's default and held controls and each member the kind accepts, and no other.
#[test]
fn each_kinds_control_keys_are_those_restage_gate_can_restore() {
    let mut members_used = BTreeSet::new();
    for (k, w) in held().iter().zip(kinds()) {
        let keys: Vec<&str> = k.control_keys.iter().map(|c| c.name.as_str()).collect();
        let mut sorted = keys.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted, "{}: sorted", k.kind);
        for control in [w.default_control(), w.held_control()] {
            for (key, value) in control.as_object().into_iter().flatten() {
                let declared = k.control_keys.iter().find(|c| c.name == *key);
                let declared = declared.unwrap_or_else(|| panic!("{}: {key}", k.kind));
                for member in value.as_object().into_iter().flatten().map(|(m, _)| m) {
                    assert!(
                        declared.members.iter().any(|m| m.name == *member),
                        "{}: {key}.{member}",
                        k.kind
                    );
                }
            }
        }
        for key in &k.control_keys {
            for member in &key.members {
                let mut probe = w.default_control();
                probe[key.name.as_str()][member.name.as_str()] = member.filled.clone();
                assert!(w.accepts(&probe), "{}: {probe}", k.kind);
                members_used.insert(member.name.clone());
            }
            if !key.members.is_empty() {
                let mut probe = w.default_control();
                probe[key.name.as_str()]["surge"] = json!(1);
                assert!(!w.accepts(&probe), "{}: a member no kind has", k.kind);
            }
        }
    }
    let vocabulary: BTreeSet<String> = generated::CONTROL_MEMBERS
        .iter()
        .map(|(m, _)| m.to_string())
        .collect();
    assert_eq!(members_used, vocabulary, "each member some kind's");
}

/// The generated text of `name`.
fn text<'a>(files: &'a [generated::Generated], name: &str) -> &'a str {
    files
        .iter()
        .find(|f| f.file == name)
        .and_then(|f| f.wanted.as_deref())
        .unwrap_or_else(|| panic!("{name} is not generated"))
}

/// `if` the cluster serves `group`, `command`, as the docs write a command per group.
fn if_served(group: &str, command: &str) -> String {
    format!(
        "if [ -n \"$(kubectl api-resources --api-group={group} -o name)\" ]; then {command}; fi"
    )
}

#[test]
fn a_kind_of_another_group_gets_its_own_rule_and_uninstall_commands_in_every_file() {
    let mut table = held();
    table.push(widget());
    let files = generated::generate(&root(), &table, &markers()).expect("generated");
    // Another group's own window job is the one file the new kind leaves as it is.
    let others = |file: &str| file.contains("/window-release-") && !file.contains("example.test");
    for f in files.iter().filter(|f| !others(&f.file)) {
        assert_ne!(f.now, f.wanted, "{}: the new kind is not written", f.file);
    }
    let metadata: Value = serde_yaml::from_str(text(&files, "metadata.yml")).expect("YAML");
    assert_eq!(ruled(&metadata["rules"], "metadata.yml"), declared(&table));
    let groups: std::collections::BTreeSet<&str> = table.iter().map(|k| k.group.as_str()).collect();
    assert_eq!(
        metadata["rules"].as_array().map(Vec::len),
        Some(groups.len()),
        "one rule per group"
    );
    let annotations = &metadata["annotations"];
    let description = annotations["io.kubewarden.policy.description"]
        .as_str()
        .expect("description");
    assert!(
        description.contains("Deployments") && description.contains(" and Widgets until"),
        "{description}"
    );
    let keywords = annotations["io.artifacthub.keywords"]
        .as_str()
        .expect("keywords");
    assert_eq!(
        keywords.matches("rollout").count(),
        1,
        "each kind a keyword once: {keywords}"
    );
    let package = text(&files, "artifacthub-pkg.yml");
    assert!(package.contains("\n- rollout\n"), "{package}");
    let uninstall = text(&files, "docs/uninstall.md");
    for command in [
        " -f window-release-example.test.yaml --ignore-not-found\n",
        "; \\\nif [ -n \"$(kubectl api-resources --api-group=example.test -o name)\" ]; then kubectl annotate widgets -A",
        "if [ -n \"$(kubectl api-resources --api-group=example.test -o name)\" ]; then kubectl get widgets -A -l restage-gate.io/held=true -o json",
        "\"example.test/Widget\": {resource: \"widgets\", control: [\"spec\", \"paused\"], remembered: \"restage-gate.io/original-widget-paused\", default: false}",
        "\"restage-gate.io/original-widget-paused\": null",
    ] {
        assert!(uninstall.contains(command), "{command}\n{uninstall}");
    }
    let readme = text(&files, "README.md");
    assert!(readme.contains(" and Widgets"), "{readme}");
    for command in [
        format!(
            "; \\\n{}\n```",
            if_served(
                "example.test",
                "kubectl get widgets -A -l restage-gate.io/held=true -o custom-columns='KIND:.kind,NAMESPACE:.metadata.namespace,NAME:.metadata.name,SINCE:.metadata.annotations.restage-gate\\.io/held-since,PENDING:.metadata.annotations.restage-gate\\.io/pending'"
            )
        ),
        "/, widget/\n".into(),
    ] {
        assert!(readme.contains(&command), "{command}\n{readme}");
    }
    assert!(
        readme.lines().any(|l| l
            .starts_with("kubectl patch widget/NAME -n NAMESPACE --type merge -p {} ")
            && l.ends_with("   # Widget")),
        "the kind's own apply-now command, named by its kind\n{readme}"
    );
    let install = text(&files, "docs/install.md");
    let built_in = &held()[0].group;
    let resources: Vec<String> = held()
        .into_iter()
        .filter(|k| k.group == *built_in)
        .map(|k| k.resource)
        .collect();
    let first = format!(
        "   {}; \\\n",
        if_served(
            built_in,
            &format!(
                "kubectl get {} -A -l restage-gate.io/held=true",
                resources.join(",")
            )
        )
    );
    let last = format!(
        "   {}\n   ```",
        if_served(
            "example.test",
            "kubectl get widgets -A -l restage-gate.io/held=true"
        )
    );
    for upgrade in [first, last] {
        assert!(install.contains(&upgrade), "{upgrade}\n{install}");
    }
}

/// The window job of a group that not every cluster serves is its own chart template: the
/// chart's CronJob on that group's resources, rendered where the cluster serves the group, and
/// the built-in job leaves them out, since kubectl fails on a resource type the cluster does not
/// serve; the role and the admission policy of the chart's window job cover every group.
#[test]
fn a_group_of_custom_resources_gets_its_own_window_job_and_the_built_in_job_leaves_it_out() {
    let mut table = held();
    table.push(widget());
    let files = generated::generate(&root(), &table, &markers()).expect("generated");
    let window = text(&files, generated::CHART_WINDOW_RELEASE);
    for want in [
        "{{- $resources := \"statefulsets,daemonsets,deployments\" }}\n",
        "'widgets': dyn(true)}[request.resource.resource]",
        "#   Widgets (example.test): by the CronJob of window-release-example.test.yaml, applied where the group is served\n",
        "  - apiGroups: [\"example.test\"]\n    resources: [\"widgets\"]\n    verbs: [\"list\", \"patch\"]\n",
    ] {
        assert!(window.contains(want), "{want}\n{window}");
    }
    let own_file = format!(
        "{}/window-release-example.test.yaml",
        generated::CHART_TEMPLATES
    );
    let own = text(&files, &own_file);
    for want in [
        "(.Capabilities.APIVersions.Has \"example.test/v1alpha1\")",
        "{{ include \"restage-gate.windowJob\" (dict \"root\" . \"name\" \"restage-gate-window-release-example-test\" \"resources\" \"widgets\") }}\n",
        "#   kubectl apply -f window-release-example.test.yaml\n",
    ] {
        assert!(own.contains(want), "{want}\n{own}");
    }
    // the same CronJob as the built-in groups', by the one template
    assert_eq!(own.matches("restage-gate.windowJob").count(), 1, "{own}");

    // removed again from the table: its template is to go
    let dir = Scratch::of(&files, "kinds-removed");
    let again = generated::generate(&dir.0, &held(), &markers()).expect("generated");
    let stale = again
        .iter()
        .find(|f| f.file == own_file)
        .expect("the group's template is looked at");
    assert!(stale.now.is_some() && stale.wanted.is_none());
}

/// The kinds `metadata.yml` names in its description and keywords are the table's.
#[test]
fn the_description_and_keywords_name_every_kind_held() {
    let metadata = yaml(&read("metadata.yml"));
    let annotations = &metadata["annotations"];
    let description = annotations["io.kubewarden.policy.description"]
        .as_str()
        .expect("description");
    let names: Vec<String> = held().iter().map(|k| format!("{}s", k.kind)).collect();
    let (last, rest) = names.split_last().expect("kinds");
    let listed = format!("{} and {last}", rest.join(", "));
    assert!(description.contains(&listed), "{description}: {listed}");
    let keywords: Vec<&str> = annotations["io.artifacthub.keywords"]
        .as_str()
        .expect("keywords")
        .split(", ")
        .collect();
    for k in held() {
        assert!(
            keywords.contains(&k.kind.to_lowercase().as_str()),
            "{keywords:?}: {}",
            k.kind
        );
    }
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
