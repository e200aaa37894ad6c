//! The commands an operator copies from README.md and docs/*.md, run as written. Every command
//! of their `console` and `sh` blocks is either run by a named test (`RUN`) or listed, with the
//! reason, in `NOT_RUN`; a command added to a doc, or one a list names that a doc no longer has,
//! fails `every_documented_command_is_run_or_listed_with_why_not`. A command that talks to a
//! cluster (kubectl, helm) is the real control plane's: its suite
//! (e2e-tests/control-plane/scenarios/docs_test.go) runs it with the real kubectl and helm, or
//! lists it with the reason. make and bash run for real here.

use std::collections::BTreeSet;

use restage_gate_e2e::docs::{all_commands, commands_of, names, selects, shell_blocks, Shell};
use restage_gate_e2e::host::policy_under_test;
use restage_gate_evaluation::guest::Guest;
use restage_gate_release::repository;
use restage_gate_testkit::fixtures;
use restage_gate_testkit::korifi::desired;
use serde_json::{json, Value};

const PODS: u32 = 3;

/// Documented commands and the test that runs each as written: (doc, command, test). A
/// command ending in ` …` names the one command of the doc that starts with the rest.
const RUN: &[(&str, &str, &str)] = &[
    (
        "docs/contributing.md",
        "cargo run -q -p restage-gate-e2e --bin restage-gate-run -- \\ …",
        "the_contributors_run_command_answers_a_bind_with_a_hold",
    ),
    (
        "README.md",
        "make check-settings POLICY=policy.yaml",
        "check_settings_passes_the_shipped_manifests_and_names_a_bad_setting",
    ),
    (
        "docs/install.md",
        "make check-settings POLICY=policy.yaml",
        "check_settings_passes_the_shipped_manifests_and_names_a_bad_setting",
    ),
    (
        "README.md",
        "make check-settings VALUES=values.yaml",
        "check_settings_of_chart_values_checks_what_the_chart_renders",
    ),
];

/// Documented commands run by a test of another suite: (doc, command, "suite.rs: test").
const RUN_ELSEWHERE: &[(&str, &str, &str)] = &[
    ("docs/install.md", "make push REGISTRY=registry.example.internal/policies", "kwctl_stand_in.rs: make_push_and_pull_with_kwctl_reach_a_plain_http_loopback_registry"),
    ("docs/install.md", "make pull REGISTRY=registry.example.internal/policies", "kwctl_stand_in.rs: make_push_and_pull_with_kwctl_reach_a_plain_http_loopback_registry"),
    ("docs/install.md", "make push REGISTRY=registry.lab.internal:5000/policies KWCTL_SOURCES=sources.yaml", "kwctl_stand_in.rs: make_gives_kwctl_plain_http_for_the_registries_the_release_tool_reaches_over_plain_http"),
];

/// The real control plane's scenarios, which run the docs' cluster commands.
const CONTROL_PLANE_SCENARIOS: &str = "e2e-tests/control-plane/scenarios";

/// A command that talks to a cluster: kubectl or helm as a word of it (as the control plane's
/// suite reads it).
fn talks_to_a_cluster(command: &str) -> bool {
    ["kubectl", "helm"].iter().any(|tool| {
        command.match_indices(tool).any(|(at, word)| {
            let before = command[..at].chars().next_back();
            let after = command[at + word.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || "_./-".contains(c))
                && !after.is_some_and(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
        })
    })
}

/// Documented commands no test runs, and why: (doc, command, reason).
const NOT_RUN: &[(&str, &str, &str)] = &[
    ("docs/install.md", "kwctl run --request-path e2e-tests/requests/01-bind.json policy.yaml", "needs kwctl; `make check-settings` runs the same check through `kwctl run` where kwctl is installed, and through the module otherwise (check_settings_passes_the_shipped_manifests_and_names_a_bad_setting)"),
    ("docs/install.md", "kwctl run --request-path e2e-tests/requests/01-bind.json restage-gate.yaml", "needs kwctl; as the line above, on the chart's rendering (check_settings_of_chart_values_checks_what_the_chart_renders)"),
    ("README.md", "make demo", "builds the module and the demo host; `make test` builds both, and interpreter.rs and kwctl_stand_in.rs check what the demo shows"),
    ("README.md", "make test", "runs this suite"),
    ("docs/contributing.md", "make demo", "as in the README"),
    ("docs/contributing.md", "make test", "runs this suite"),
    ("docs/contributing.md", "cd fuzz", "the differential run it records takes over an hour on 2 cores; `make test` runs the same target for 10 s (make fuzz-smoke)"),
    ("docs/contributing.md", "cargo +nightly fuzz build -s none --no-trace-compares differential", "as `cd fuzz`: `make fuzz-smoke` builds and runs the target"),
    ("docs/contributing.md", "./target/x86_64-unknown-linux-gnu/release/differential corpus/differential \\ …", "the recorded 10-million-input run: a measurement, not a pass/fail check"),
    ("docs/install.md", "kwctl pull registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0", "needs kwctl and the release published on ghcr.io; kwctl_stand_in.rs pulls what make push pushed to a local registry"),
    ("docs/install.md", "kwctl inspect registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0", "needs kwctl and the published release"),
    ("docs/install.md", "docker run --rm -p 3000:3000 -v \"$PWD/docs/policies.yml:/policies.yml:ro\" \\ …", "needs docker and the published release; the policies it runs are checked against the install manifests (tools/release manifests.rs)"),
    ("docs/install.md", "curl -s -X POST http://localhost:3000/validate/restage-gate \\ …", "needs the policy server started above; the answer to that request is checked by bundled_requests.rs"),
    ("docs/install.md", "make annotated-policy.wasm", "`make test` does not annotate; the annotation is checked by registry.rs (the_annotated_module_evaluates_like_the_plain_one) and, through kwctl, by the bats suite"),
    ("docs/install.md", "REGISTRY_USERNAME=ci-bot REGISTRY_PASSWORD=… make sign REGISTRY=registry.example.internal/policies COSIGN_KEY=cosign.key", "signs on the operator's registry with the operator's key; the release tool's login is checked by registry.rs (the_release_tool_logs_in_with_registry_username_and_password)"),
    ("docs/install.md", "export COSIGN_PASSWORD=…", "the operator's password"),
    ("docs/install.md", "make keys KEY_DIR=$HOME/.restage-gate", "builds the release tool with its signing stack (minutes); keys, signing by digest and verification run on a local registry in registry.rs (signatures_are_cosigns_and_verify_as_policy_servers_verify_them)"),
    ("docs/install.md", "make push REGISTRY=ghcr.io/restage-gate/policies", "pushes to the project's registry; make push to a local registry runs in kwctl_stand_in.rs"),
    ("docs/install.md", "make sign REGISTRY=ghcr.io/restage-gate/policies COSIGN_KEY=$HOME/.restage-gate/cosign.key", "signs on the project's registry; as `make keys`"),
    ("docs/install.md", "make verify REGISTRY=ghcr.io/restage-gate/policies COSIGN_PUBLIC_KEY=$HOME/.restage-gate/cosign.pub", "reads the project's registry; as `make keys`"),
    ("docs/install.md", "kwctl verify --verification-config-path verification-config.yml registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0", "needs kwctl and the release signed in GitHub Actions"),
    ("docs/releasing.md", "cosign verify \\ …", "needs cosign and a release signed in GitHub Actions"),
    ("docs/releasing.md", "git clone REPO fresh && cd fresh", "REPO is the repository's address; the measurement it starts is not a pass/fail check"),
    ("docs/releasing.md", "CARGO_TARGET_DIR=/tmp/fresh-target /usr/bin/time -v make push REGISTRY=127.0.0.1:5000/test", "a measurement from a fresh clone; make push to a local registry runs in kwctl_stand_in.rs"),
];

/// A list's entries: (doc, command, test or reason).
type Entries = &'static [(&'static str, &'static str, &'static str)];

/// Every list of this suite, by name.
const LISTS: [(&str, Entries); 3] = [
    ("RUN", RUN),
    ("RUN_ELSEWHERE", RUN_ELSEWHERE),
    ("NOT_RUN", NOT_RUN),
];

/// The entries of the lists that name a doc's command, as "LIST: entry".
fn entries_for(file: &str, command: &str) -> Vec<String> {
    LISTS
        .iter()
        .flat_map(|(list, rows)| rows.iter().map(move |r| (*list, r)))
        .filter(|(_, (f, c, _))| *f == file && names(c, command))
        .map(|(list, (_, c, _))| format!("{list}: {c}"))
        .collect()
}

#[test]
fn every_documented_command_is_run_or_listed_with_why_not() {
    let commands = all_commands();
    let mut problems = Vec::new();
    for c in &commands {
        let entries = entries_for(&c.file, &c.text);
        if talks_to_a_cluster(&c.text) {
            if !entries.is_empty() {
                problems.push(format!(
                    "{}: `{}` talks to a cluster, which the control plane's suite ({CONTROL_PLANE_SCENARIOS}/docs_test.go) runs or lists; this suite lists it in {entries:?}",
                    c.file, c.text
                ));
            }
            continue;
        }
        match entries.as_slice() {
            [_] => {}
            [] => problems.push(format!(
                "{}: `{}` is neither run by a test nor listed with why not: run it as written here (RUN) or list it in NOT_RUN",
                c.file, c.text
            )),
            more => problems.push(format!("{}: `{}` is named by {} entries: {more:?}", c.file, c.text, more.len())),
        }
    }
    for (list, rows) in LISTS {
        for (file, entry, _) in rows {
            let matching = commands
                .iter()
                .filter(|c| c.file == *file && names(entry, &c.text))
                .count();
            if matching != 1 {
                problems.push(format!(
                    "{list}: {file}: `{entry}` names {matching} documented commands; name exactly one as the doc writes it"
                ));
            }
        }
    }
    let this = include_str!("operator_docs.rs");
    for test in RUN.iter().map(|r| r.2).collect::<BTreeSet<_>>() {
        if !this.contains(&format!("fn {test}()")) {
            problems.push(format!("RUN names a test {test} this suite does not have"));
        }
    }
    for (_, _, at) in RUN_ELSEWHERE {
        let (suite, test) = at.split_once(": ").expect("suite.rs: test");
        // A Rust suite of e2e-tests/tests, or a Go test file of the control plane's scenarios.
        let (path, declared) = match suite.strip_suffix(".go") {
            Some(_) => (
                repository::root()
                    .join("e2e-tests/control-plane/scenarios")
                    .join(suite),
                format!("func {test}(t *testing.T)"),
            ),
            None => (
                repository::root().join("e2e-tests/tests").join(suite),
                format!("fn {test}()"),
            ),
        };
        let source = std::fs::read_to_string(&path).unwrap_or_default();
        if !source.contains(&declared) {
            problems.push(format!("RUN_ELSEWHERE names {at}, which does not exist"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The commands a test runs: each is taken from its doc as written, and must be one the RUN
/// list gives this test; at the end every command RUN gives it must have run.
struct Docs {
    test: &'static str,
    ran: BTreeSet<(&'static str, &'static str)>,
    shell: Shell,
}

impl Docs {
    fn new(test: &'static str) -> Docs {
        Docs {
            test,
            ran: BTreeSet::new(),
            shell: Shell::new(),
        }
    }

    /// The documented command `entry` names in `file`, as the doc writes it.
    fn command(&mut self, file: &'static str, entry: &'static str) -> String {
        let row = RUN
            .iter()
            .find(|r| r.0 == file && r.1 == entry)
            .unwrap_or_else(|| panic!("RUN has no {file}: `{entry}`"));
        assert_eq!(
            row.2, self.test,
            "RUN gives {file}: `{entry}` to another test"
        );
        self.ran.insert((file, entry));
        commands_of(file)
            .into_iter()
            .find(|c| names(entry, &c.text))
            .unwrap_or_else(|| panic!("{file} no longer has `{entry}`"))
            .text
    }

    /// Runs a documented command, which must succeed; its stdout.
    fn run(&mut self, file: &'static str, entry: &'static str) -> String {
        let command = self.command(file, entry);
        self.shell.perform(&command)
    }

    fn finish(self) {
        let given: BTreeSet<(&str, &str)> = RUN
            .iter()
            .filter(|r| r.2 == self.test)
            .map(|r| (r.0, r.1))
            .collect();
        assert_eq!(
            self.ran, given,
            "{}: the commands RUN gives it, each run",
            self.test
        );
    }
}

#[test]
fn check_settings_passes_the_shipped_manifests_and_names_a_bad_setting() {
    let mut docs = Docs::new("check_settings_passes_the_shipped_manifests_and_names_a_bad_setting");
    let command = docs.command("docs/install.md", "make check-settings POLICY=policy.yaml");
    assert_eq!(
        docs.command("README.md", "make check-settings POLICY=policy.yaml"),
        command,
        "the README's settings check is the upgrade's"
    );
    let out = docs.shell.perform(&command);
    assert!(
        out.contains("policy.yaml: ClusterAdmissionPolicy restage-gate: ok"),
        "{out}"
    );
    for manifest in ["guard.yaml", "monitor.yaml"] {
        let out = docs
            .shell
            .perform(&command.replace("policy.yaml", manifest));
        assert!(
            out.contains(&format!("{manifest}: ClusterAdmissionPolicy")),
            "{out}"
        );
        assert!(
            out.lines()
                .all(|l| !l.contains(": ClusterAdmissionPolicy ") || l.ends_with(": ok")),
            "{out}"
        );
    }

    let bad = docs.shell.file("bad-window.yaml");
    let text = repository::read(&repository::root(), "policy.yaml").expect("policy.yaml");
    let text = text.replacen(
        "    mode: defer\n",
        "    mode: defer\n    maintenanceWindows:\n      - days: [Sat]\n        start: \"25:00\"\n        end: \"04:00\"\n",
        1,
    );
    std::fs::write(&bad, text).expect("write");
    refused(
        &docs,
        &command.replace("policy.yaml", &bad.display().to_string()),
        "maintenanceWindows[0].start",
    );
    docs.finish();
}

/// `command` fails, naming `field`.
fn refused(docs: &Docs, command: &str, field: &str) {
    let out = docs.shell.run(command);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "a bad setting fails the check:\n{said}"
    );
    assert!(said.contains(field), "the field is named:\n{said}");
}

/// `make check-settings VALUES=FILE` checks the settings of the chart's policies rendered with
/// the values: `ok` for the policy and its guard with good values, the field named for a bad
/// one.
#[test]
fn check_settings_of_chart_values_checks_what_the_chart_renders() {
    let mut docs = Docs::new("check_settings_of_chart_values_checks_what_the_chart_renders");
    let command = docs.command("README.md", "make check-settings VALUES=values.yaml");
    let good = docs.shell.file("good-values.yaml");
    std::fs::write(
        &good,
        "settings:\n  maintenanceWindows:\n    - days: [Sat]\n      start: \"02:00\"\n      end: \"04:00\"\n",
    )
    .expect("write");
    let out = docs
        .shell
        .perform(&command.replace("values.yaml", &good.display().to_string()));
    for policy in ["restage-gate", "restage-gate-guard"] {
        assert!(
            out.contains(&format!(
                "good-values.yaml: ClusterAdmissionPolicy {policy}: ok"
            )),
            "{out}"
        );
    }
    let bad = docs.shell.file("bad-values.yaml");
    std::fs::write(
        &bad,
        "settings:\n  maintenanceWindows:\n    - days: [Sat]\n      start: \"25:00\"\n      end: \"04:00\"\n",
    )
    .expect("write");
    refused(
        &docs,
        &command.replace("values.yaml", &bad.display().to_string()),
        "ClusterAdmissionPolicy restage-gate: settings.maintenanceWindows[0].start",
    );
    docs.finish();
}

/// The YAML of the doc's `yaml` blocks that mention `key`, read as one map.
fn yaml_block_with(markdown: &str, key: &str) -> Value {
    let mut blocks = markdown
        .split("```yaml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or_default());
    let block = blocks
        .find(|b| b.contains(key))
        .unwrap_or_else(|| panic!("a yaml block with {key}"));
    let indent = block
        .lines()
        .map(|l| l.len() - l.trim_start().len())
        .min()
        .unwrap_or(0);
    let text: String = block
        .lines()
        .map(|l| format!("{}\n", l.get(indent..).unwrap_or_default()))
        .collect();
    serde_yaml::from_str(&text).expect("YAML")
}

/// docs/install.md's window that spreads its releases is settings the module accepts; the
/// scenarios run that spread (`a_window_with_a_spread_releases_the_held_workloads_over_the_jobs_ticks`).
#[test]
fn the_documented_spread_is_accepted_by_the_module() {
    let guide = repository::read(&repository::root(), "docs/install.md").expect("install.md");
    let settings = yaml_block_with(&guide, "spreadMinutes:")["settings"].clone();
    assert_eq!(
        settings["maintenanceWindows"][0]["spreadMinutes"],
        json!(30),
        "the spread the scenarios run"
    );
    assert_eq!(policy_under_test().validate_settings(&settings), Ok(None));
}

#[test]
fn the_documented_selectors_choose_korifis_apps_or_labelled_namespaces() {
    let guide = repository::read(&repository::root(), "docs/install.md").expect("install.md");
    let object_selector = yaml_block_with(&guide, "objectSelector:")["objectSelector"].clone();
    let namespace_selector =
        yaml_block_with(&guide, "namespaceSelector:")["namespaceSelector"].clone();

    // The chart's values.yaml carries both as commented examples of the values every policy
    // gets: the same selectors.
    let values = repository::read(&repository::root(), "charts/restage-gate/values.yaml")
        .expect("values.yaml");
    let example = |key: &str| -> Value {
        let lines: Vec<&str> = values.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with(&format!("{key}:")))
            .unwrap_or_else(|| panic!("values.yaml has no {key}"));
        let mut start = at;
        while start > 0 && lines[start - 1].starts_with("#   ") {
            start -= 1;
        }
        let text: String = lines[start..at]
            .iter()
            .map(|l| format!("{}\n", &l[4..]))
            .collect();
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{key}'s example: {e}"))
    };
    assert_eq!(example("objectSelector"), object_selector);
    assert_eq!(
        example("namespaceSelectorExpressions"),
        namespace_selector["matchExpressions"]
    );

    // Every Korifi app workload carries the label; the other platforms' fixtures do not.
    let korifi = desired(0, PODS);
    assert!(selects(&object_selector, &korifi["metadata"]["labels"]));
    for other in [fixtures::daemonset(), fixtures::deployment()] {
        assert!(
            !selects(&object_selector, &other["metadata"]["labels"]),
            "{}: missed, as the doc says",
            other["kind"]
        );
    }
    assert!(
        !selects(&namespace_selector, &json!({})),
        "an unlabelled namespace is not in scope"
    );
    // The label the doc's `kubectl label namespace` command sets (run on the real control
    // plane) selects the namespace.
    let label = commands_of("docs/install.md")
        .into_iter()
        .find(|c| c.text.starts_with("kubectl label namespace NAMESPACE "))
        .expect("docs/install.md labels a namespace")
        .text;
    let (key, value) = label
        .rsplit(' ')
        .next()
        .and_then(|l| l.split_once('='))
        .expect("KEY=VALUE");
    let labels = json!({ key: value });
    assert!(selects(&namespace_selector, &labels), "{labels}");
}

#[test]
fn the_contributors_run_command_answers_a_bind_with_a_hold() {
    let mut docs = Docs::new("the_contributors_run_command_answers_a_bind_with_a_hold");
    let out = docs.run(
        "docs/contributing.md",
        "cargo run -q -p restage-gate-e2e --bin restage-gate-run -- \\ …",
    );
    let response: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(response["allowed"], true, "{response}");
    assert_eq!(
        response["patchType"], "JSONPatch",
        "a hold is a patch: {response}"
    );
    docs.finish();
}

#[test]
fn the_docs_have_shell_blocks_to_check() {
    // The extraction finds the blocks an operator copies from: a rename of the fence
    // language would otherwise leave every command unchecked.
    let readme = repository::read(&repository::root(), "README.md").expect("README.md");
    assert!(shell_blocks(&readme).len() >= 4);
    assert!(commands_of("docs/uninstall.md").len() >= 4);
}
