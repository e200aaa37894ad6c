//! The commands an operator copies from README.md and docs/*.md, run as written. Every command
//! of their `console` and `sh` blocks is either run by a named test (`RUN`) or listed, with
//! the reason, in `NOT_RUN`; a command added to a doc, or one a list names that a doc no
//! longer has, fails `every_documented_command_is_run_or_listed_with_why_not`. The kubectl
//! commands run in bash against a stand-in kubectl, and the cluster simulation performs the
//! calls they make (`restage_gate_e2e::docs`); make runs for real.

use std::collections::BTreeSet;

use restage_gate::markers::{HELD_LABEL, HELD_SINCE_ANNOTATION, PENDING_ANNOTATION};
use restage_gate_e2e::cluster::{every_kind, Cluster, Controller, Kind, Order, Policy};
use restage_gate_e2e::docs::{
    all_commands, commands_of, names, selects, shell_blocks, Shell, Site,
};
use restage_gate_e2e::host::policy_under_test;
use restage_gate_release::repository;
use restage_gate_testkit::fixtures;
use restage_gate_testkit::kinds::Owner;
use restage_gate_testkit::korifi::{desired, orders_db};
use serde_json::{json, Value};

const PODS: u32 = 3;

/// Documented commands and the test that runs each as written: (doc, command, test). A
/// command ending in ` …` names the one command of the doc that starts with the rest.
const RUN: &[(&str, &str, &str)] = &[
    ("README.md", "kubectl apply -f policy.yaml", "the_defer_setup_holds_every_bind_and_restarts_nothing"),
    ("README.md", "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate --timeout=5m", "the_defer_setup_holds_every_bind_and_restarts_nothing"),
    ("README.md", "kubectl apply -f policy.yaml -f guard.yaml", "the_guard_refuses_the_runners_write_until_the_binding_is_held"),
    ("README.md", "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate clusteradmissionpolicy/restage-gate-guard --timeout=5m", "the_guard_refuses_the_runners_write_until_the_binding_is_held"),
    ("README.md", "kubectl apply -f monitor.yaml", "measuring_first_reports_each_bind_and_changes_nothing"),
    ("README.md", "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate-monitor --timeout=5m", "measuring_first_reports_each_bind_and_changes_nothing"),
    ("README.md", "kubectl delete clusteradmissionpolicy restage-gate-monitor", "measuring_first_reports_each_bind_and_changes_nothing"),
    ("README.md", "if [ -n \"$(kubectl api-resources --api-group=apps -o name)\" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true -o custom-columns= …", "held_workloads_are_found_and_their_changes_applied_now"),
    ("README.md", "kubectl annotate statefulset/NAME -n NAMESPACE restage-gate.io/release=now --overwrite", "held_workloads_are_found_and_their_changes_applied_now"),
    ("docs/contributing.md", "cargo run -q -p restage-gate-e2e --bin restage-gate-run -- \\ …", "the_contributors_run_command_answers_a_bind_with_a_hold"),
    ("docs/install.md", "kubectl label namespace NAMESPACE restage-gate.io/enabled=true", "the_documented_selectors_choose_korifis_apps_or_labelled_namespaces"),
    ("docs/install.md", "if [ -n \"$(kubectl api-resources --api-group=apps -o name)\" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true; fi …", "an_upgrade_keeps_every_hold"),
    ("docs/install.md", "kubectl apply -f policy.yaml -f guard.yaml", "an_upgrade_keeps_every_hold"),
    ("docs/install.md", "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate clusteradmissionpolicy/restage-gate-guard --timeout=5m", "an_upgrade_keeps_every_hold"),
    ("README.md", "make check-settings POLICY=policy.yaml", "check_settings_passes_the_shipped_manifests_and_names_a_bad_setting"),
    ("docs/install.md", "make check-settings POLICY=policy.yaml", "check_settings_passes_the_shipped_manifests_and_names_a_bad_setting"),
    ("README.md", "make check-settings VALUES=values.yaml", "check_settings_of_chart_values_checks_what_the_chart_renders"),
    ("docs/uninstall.md", "kubectl delete clusteradmissionpolicy restage-gate-guard", "removing_the_guard_first_never_refuses_a_bind"),
];

/// Documented commands run by a test of another suite: (doc, command, "suite.rs: test"), or of
/// the real control plane's scenarios (doc, command, "file_test.go: TestName").
const RUN_ELSEWHERE: &[(&str, &str, &str)] = &[
    ("docs/install.md", "make push REGISTRY=registry.example.internal/policies", "kwctl_stand_in.rs: make_push_and_pull_with_kwctl_reach_a_plain_http_loopback_registry"),
    ("docs/install.md", "make pull REGISTRY=registry.example.internal/policies", "kwctl_stand_in.rs: make_push_and_pull_with_kwctl_reach_a_plain_http_loopback_registry"),
    ("docs/install.md", "make push REGISTRY=registry.lab.internal:5000/policies KWCTL_SOURCES=sources.yaml", "kwctl_stand_in.rs: make_gives_kwctl_plain_http_for_the_registries_the_release_tool_reaches_over_plain_http"),
    ("docs/install.md", "kubectl apply -f window-release.yaml", "uninstall.rs: the_documented_uninstall_releases_every_held_workload_once"),
    ("docs/uninstall.md", "kubectl delete -f window-release-binding.yaml …", "uninstall.rs: the_documented_uninstall_releases_every_held_workload_once"),
    ("README.md", "helm install restage-gate charts/restage-gate -n kubewarden", "docs_test.go: TestDocsChart"),
    ("docs/install.md", "kubectl get clusteradmissionpolicies", "docs_test.go: TestDocsChart"),
    ("docs/install.md", "helm upgrade restage-gate charts/restage-gate -n kubewarden --reuse-values --set-json …", "docs_test.go: TestDocsChart"),
    ("docs/install.md", "helm upgrade restage-gate charts/restage-gate -n kubewarden --reuse-values", "docs_test.go: TestDocsChart"),
    ("docs/install.md", "helm template restage-gate charts/restage-gate -f values.yaml …", "docs_test.go: TestDocsChart"),
    ("docs/install.md", "kubectl apply -f window-release-binding.yaml", "docs_test.go: TestDocsInstall"),
    ("docs/uninstall.md", "if [ -n \"$(kubectl api-resources --api-group=apps -o name)\" ]; then kubectl annotate …", "uninstall.rs: the_documented_uninstall_releases_every_held_workload_once"),
    ("docs/uninstall.md", "kubectl delete clusteradmissionpolicy restage-gate", "uninstall.rs: the_documented_uninstall_releases_every_held_workload_once"),
    ("docs/uninstall.md", "restore=' …", "uninstall.rs: the_documented_uninstall_releases_every_held_workload_once"),
    ("docs/uninstall.md", "if [ -n \"$(kubectl api-resources --api-group=apps -o name)\" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true -o json …", "uninstall.rs: the_documented_uninstall_releases_every_held_workload_once"),
    ("docs/uninstall.md", "if [ -n \"$(kubectl api-resources --api-group=apps -o name)\" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true; fi …", "uninstall.rs: the_documented_uninstall_releases_every_held_workload_once"),
];

/// Documented commands no test runs, and why: (doc, command, reason).
const NOT_RUN: &[(&str, &str, &str)] = &[
    ("docs/install.md", "kubectl logs -n kubewarden deployment/policy-server-default", "reads a real Kubewarden's policy server, which neither this simulation nor the control plane runs"),
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
    ("docs/install.md", "kubectl create configmap restage-gate-verification -n kubewarden --from-file=verification-config=verification-config.yml", "needs Kubewarden's PolicyServer, which the simulation does not model"),
    ("docs/install.md", "kwctl verify --verification-config-path verification-config.yml registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0", "needs kwctl and the release signed in GitHub Actions"),
    ("docs/releasing.md", "cosign verify \\ …", "needs cosign and a release signed in GitHub Actions"),
    ("docs/releasing.md", "git clone REPO fresh && cd fresh", "REPO is the repository's address; the measurement it starts is not a pass/fail check"),
    ("docs/releasing.md", "CARGO_TARGET_DIR=/tmp/fresh-target /usr/bin/time -v make push REGISTRY=127.0.0.1:5000/test", "a measurement from a fresh clone; make push to a local registry runs in kwctl_stand_in.rs"),
];

/// The test that runs each kind's own apply-now command, which `make kinds` writes into the
/// README from the kind.
const APPLY_NOW_TEST: &str = "held_workloads_are_found_and_their_changes_applied_now";

/// Documented commands written per kind: each kind's apply-now command as its test-kit
/// descriptor gives it, for any workload (`NAME`, `NAMESPACE`): (doc, command, test).
fn per_kind() -> Vec<(&'static str, String, &'static str)> {
    every_kind()
        .iter()
        .map(|k| {
            (
                "README.md",
                k.apply_now("NAMESPACE", "NAME"),
                APPLY_NOW_TEST,
            )
        })
        .collect()
}

/// The entries of the lists that name a doc's command, as "LIST: entry".
fn entries_for(file: &str, command: &str) -> Vec<String> {
    let per_kind = per_kind();
    let per_kind: Vec<(&str, &str, &str)> = per_kind
        .iter()
        .map(|(f, c, t)| (*f, c.as_str(), *t))
        .collect();
    [
        ("RUN", RUN),
        ("RUN_ELSEWHERE", RUN_ELSEWHERE),
        ("NOT_RUN", NOT_RUN),
        ("PER_KIND", &per_kind[..]),
    ]
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
        match entries_for(&c.file, &c.text).as_slice() {
            [_] => {}
            [] => problems.push(format!(
                "{}: `{}` is neither run by a test nor listed with why not: run it as written here (RUN) or list it in NOT_RUN",
                c.file, c.text
            )),
            more => problems.push(format!("{}: `{}` is named by {} entries: {more:?}", c.file, c.text, more.len())),
        }
    }
    let per_kind = per_kind();
    let per_kind: Vec<(&str, &str, &str)> = per_kind
        .iter()
        .map(|(f, c, t)| (*f, c.as_str(), *t))
        .collect();
    for (list, rows) in [
        ("RUN", RUN),
        ("RUN_ELSEWHERE", RUN_ELSEWHERE),
        ("NOT_RUN", NOT_RUN),
        ("PER_KIND", &per_kind[..]),
    ] {
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

    /// Runs a documented command against `site`, which performs its kubectl calls; its
    /// stdout and the calls.
    fn run(
        &mut self,
        site: &mut Site,
        file: &'static str,
        entry: &'static str,
    ) -> (String, Vec<Vec<String>>) {
        let command = self.command(file, entry);
        self.run_text(site, &command)
    }

    fn run_text(&self, site: &mut Site, command: &str) -> (String, Vec<Vec<String>>) {
        self.shell.perform(command, site)
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

fn app(kind: Kind, policies: Vec<Policy>) -> Cluster {
    Cluster::with_policies(
        policy_under_test(),
        kind,
        Order::PolicyFirst,
        policies,
        PODS,
    )
}

/// A cluster with one app of each kind and no policy yet.
fn site() -> Site {
    Site::new(every_kind().into_iter().map(|k| app(k, vec![])).collect())
}

/// The kind Korifi runs apps as.
fn korifi() -> Kind {
    every_kind()
        .into_iter()
        .find(|k| k.owner() == Owner::Korifi)
        .expect("a kind Korifi runs apps as")
}

/// The ClusterAdmissionPolicies of install manifests, read as `kubectl apply -f` reads them.
fn manifests(files: &[&str]) -> Vec<Policy> {
    files
        .iter()
        .flat_map(|f| {
            let text = repository::read(&repository::root(), f).expect("manifest");
            repository::yaml_documents(f, &text).expect("YAML")
        })
        .map(|d| Policy::from_manifest(&d).expect("a ClusterAdmissionPolicy"))
        .collect()
}

/// The binding of each kind's fixture app.
fn binding(kind: Kind) -> restage_gate_testkit::projector::Binding {
    match kind.owner() {
        Owner::Korifi => orders_db(),
        Owner::Kubectl => fixtures::orders_binding(),
    }
}

fn held_with_no_restart(c: &Cluster) {
    let kind = c.kind.name();
    assert!(c.is_held(), "{kind}: held");
    assert_eq!(c.restarts, 0, "{kind}: no pod restarted");
    assert!(c.refused.is_empty(), "{kind}: {:?}", c.refused);
    assert!(c.stuck.is_empty(), "{kind}: {:?}", c.stuck);
}

fn released_in_one_rollout(c: &Cluster) {
    let kind = c.kind.name();
    assert!(!c.is_held(), "{kind}: released");
    assert_eq!(c.rollouts.len(), 1, "{kind}: one rollout");
    assert_eq!(c.restarts, PODS as usize, "{kind}: every pod once");
    assert!(
        c.pod_bindings()
            .iter()
            .all(|b| b.contains(&binding(c.kind).name)),
        "{kind}: every pod has the binding: {:?}",
        c.pod_bindings()
    );
}

#[test]
fn the_defer_setup_holds_every_bind_and_restarts_nothing() {
    let mut docs = Docs::new("the_defer_setup_holds_every_bind_and_restarts_nothing");
    let mut site = site();
    let wait = docs.command(
        "README.md",
        "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate --timeout=5m",
    );
    let (early, _) = docs.shell.run(&wait, &site, &[]);
    assert!(
        !early.status.success(),
        "nothing to wait for before the apply"
    );

    docs.run(&mut site, "README.md", "kubectl apply -f policy.yaml");
    let (waited, _) = docs.run_text(&mut site, &wait);
    assert!(waited.contains("restage-gate condition met"), "{waited}");
    assert_eq!(site.installed(), ["restage-gate"]);
    for c in &mut site.workloads {
        assert!(
            c.bind(&binding(c.kind)),
            "{}: the bind is stored",
            c.kind.name()
        );
        held_with_no_restart(c);
    }
    docs.finish();
}

#[test]
fn the_guard_refuses_the_runners_write_until_the_binding_is_held() {
    let mut docs = Docs::new("the_guard_refuses_the_runners_write_until_the_binding_is_held");
    // Without the guard: the runner's write, into which the projector folds a binding its
    // runtime controller has not written yet, rolls the pods.
    let mut alone = app(korifi(), manifests(&["policy.yaml"]));
    alone.bind_pending(&orders_db());
    assert!(alone.runner(PODS));
    assert!(!alone.is_held());
    assert_eq!(alone.restarts, PODS as usize, "the race the guard closes");

    let mut site = Site::new(vec![app(korifi(), vec![])]);
    docs.run(
        &mut site,
        "README.md",
        "kubectl apply -f policy.yaml -f guard.yaml",
    );
    let (waited, _) = docs.run(
        &mut site,
        "README.md",
        "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate clusteradmissionpolicy/restage-gate-guard --timeout=5m",
    );
    assert_eq!(waited.lines().count(), 2, "{waited}");
    assert_eq!(site.installed(), ["restage-gate", "restage-gate-guard"]);

    let c = &mut site.workloads[0];
    c.bind_pending(&orders_db());
    // The runner reconciles first, then the runtime controller; each retries a refused write.
    let landed = c.run_controllers(&[Controller::Runner(PODS), Controller::Bindings], 3);
    assert_eq!(
        landed,
        [(Controller::Runner(PODS), Some(2)), (Controller::Bindings, Some(1))],
        "the runner's first write refused, the runtime controller's held, the runner's retry stored"
    );
    assert_eq!(c.refused.len(), 1, "{:?}", c.refused);
    assert_eq!(c.refused[0].policy, "restage-gate-guard");
    assert_eq!(c.refused[0].writer, "statefulset-runner");
    assert!(c.is_held());
    assert_eq!(c.restarts, 0, "no pod restarted");
    assert!(c.stuck.is_empty(), "{:?}", c.stuck);
    assert_eq!(
        c.annotation(PENDING_ANNOTATION).as_deref(),
        Some("+orders-db")
    );
    docs.finish();
}

#[test]
fn measuring_first_reports_each_bind_and_changes_nothing() {
    let mut docs = Docs::new("measuring_first_reports_each_bind_and_changes_nothing");
    let mut site = site();
    docs.run(&mut site, "README.md", "kubectl apply -f monitor.yaml");
    docs.run(
        &mut site,
        "README.md",
        "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate-monitor --timeout=5m",
    );
    for c in &mut site.workloads {
        let kind = c.kind.name();
        assert!(c.bind(&binding(c.kind)), "{kind}: nothing refused");
        assert!(!c.is_held(), "{kind}: nothing held");
        assert_eq!(
            c.restarts, PODS as usize,
            "{kind}: the app restarts as without the policy"
        );
        let reported: Vec<_> = c.reports.iter().filter(|r| r.refusal.is_some()).collect();
        assert_eq!(reported.len(), 1, "{kind}: {:?}", c.reports);
        assert_eq!(reported[0].policy, "restage-gate-monitor");
        assert!(
            reported[0]
                .refusal
                .as_deref()
                .unwrap_or_default()
                .contains(&binding(c.kind).name),
            "{kind}: the report names the binding: {:?}",
            reported[0]
        );
    }

    // Beside the defer policy it would see each bind already held, and report nothing.
    let mut beside = app(korifi(), manifests(&["monitor.yaml", "policy.yaml"]));
    assert!(beside.bind(&orders_db()));
    assert!(beside.is_held());
    assert_eq!(
        beside.reports,
        [],
        "nothing to report beside the defer policy"
    );

    docs.run(
        &mut site,
        "README.md",
        "kubectl delete clusteradmissionpolicy restage-gate-monitor",
    );
    assert!(site.installed().is_empty());
    docs.finish();
}

#[test]
fn held_workloads_are_found_and_their_changes_applied_now() {
    let mut docs = Docs::new("held_workloads_are_found_and_their_changes_applied_now");
    let hold_all = |site: &mut Site| {
        for c in &mut site.workloads {
            *c = app(c.kind, manifests(&["policy.yaml"]));
            assert!(c.bind(&binding(c.kind)));
            held_with_no_restart(c);
        }
    };
    let mut site = site();
    hold_all(&mut site);

    let (_, calls) = docs.run(
        &mut site,
        "README.md",
        "if [ -n \"$(kubectl api-resources --api-group=apps -o name)\" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true -o custom-columns= …",
    );
    // a table per API group, each with its header
    let mut rows = Vec::new();
    for call in calls.iter().filter(|c| c[0] == "get") {
        let table = site.custom_columns(call);
        let mut lines = table.lines().map(str::to_string);
        assert_eq!(
            lines.next().as_deref(),
            Some("KIND NAMESPACE NAME SINCE PENDING")
        );
        rows.extend(lines);
    }
    assert_eq!(rows.len(), site.workloads.len(), "{rows:#?}");
    for c in &site.workloads {
        let o = c.object.clone().expect("stored");
        let row = [
            o["kind"].as_str(),
            o["metadata"]["namespace"].as_str(),
            o["metadata"]["name"].as_str(),
            o["metadata"]["annotations"][HELD_SINCE_ANNOTATION].as_str(),
            o["metadata"]["annotations"][PENDING_ANNOTATION].as_str(),
        ]
        .map(|v| v.expect("a value").to_string())
        .join(" ");
        assert!(rows.contains(&row), "{row} in\n{rows:#?}");
    }

    // `kubectl annotate statefulset/NAME …   # or daemonset/, deployment/`: every kind
    let annotate = docs.command(
        "README.md",
        "kubectl annotate statefulset/NAME -n NAMESPACE restage-gate.io/release=now --overwrite",
    );
    let first = format!("{}/", every_kind()[0].name().to_lowercase());
    for kind in every_kind().iter().map(|k| k.name().to_lowercase()) {
        docs.run_text(&mut site, &annotate.replace(&first, &format!("{kind}/")));
    }
    for c in &site.workloads {
        released_in_one_rollout(c);
    }

    // each kind's own command, as the README writes it
    hold_all(&mut site);
    let readme = commands_of("README.md");
    for (_, command, _) in per_kind() {
        let written = readme
            .iter()
            .find(|c| c.text == command)
            .unwrap_or_else(|| panic!("README.md has no `{command}`"));
        docs.run_text(&mut site, &written.text);
    }
    for c in &site.workloads {
        released_in_one_rollout(c);
    }
    docs.finish();
}

#[test]
fn an_upgrade_keeps_every_hold() {
    let mut docs = Docs::new("an_upgrade_keeps_every_hold");
    let mut site = site();
    for c in &mut site.workloads {
        *c = app(c.kind, manifests(&["policy.yaml", "guard.yaml"]));
        assert!(c.bind(&binding(c.kind)));
        held_with_no_restart(c);
    }
    let markers = |site: &Site| -> Vec<Value> {
        site.held()
            .iter()
            .map(|o| {
                json!([
                    o["metadata"]["labels"][HELD_LABEL],
                    o["metadata"]["annotations"]
                ])
            })
            .collect()
    };
    let before = markers(&site);

    let (listed, _) = docs.run(
        &mut site,
        "docs/install.md",
        "if [ -n \"$(kubectl api-resources --api-group=apps -o name)\" ]; then kubectl get statefulsets,daemonsets,deployments -A -l restage-gate.io/held=true; fi …",
    );
    assert_eq!(listed.lines().count(), site.workloads.len(), "{listed}");
    docs.run(
        &mut site,
        "docs/install.md",
        "kubectl apply -f policy.yaml -f guard.yaml",
    );
    docs.run(
        &mut site,
        "docs/install.md",
        "kubectl wait --for=jsonpath='{.status.policyStatus}'=active clusteradmissionpolicy/restage-gate clusteradmissionpolicy/restage-gate-guard --timeout=5m",
    );
    assert_eq!(
        markers(&site),
        before,
        "every hold and its markers as they were"
    );

    for c in &mut site.workloads {
        held_with_no_restart(c);
        // a restage after the upgrade releases what the old module held
        if c.kind
            .restart_refused(&c.object.clone().unwrap_or_default())
        {
            assert!(c.rollout_resume());
        } else {
            assert!(c.rollout_restart());
        }
        released_in_one_rollout(c);
    }
    docs.finish();
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
    let mut site = Site::new(vec![]);
    let (out, _) = docs.run_text(&mut site, &command);
    assert!(
        out.contains("policy.yaml: ClusterAdmissionPolicy restage-gate: ok"),
        "{out}"
    );
    for manifest in ["guard.yaml", "monitor.yaml"] {
        let (out, _) = docs.run_text(&mut site, &command.replace("policy.yaml", manifest));
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
        &site,
        &command.replace("policy.yaml", &bad.display().to_string()),
        "maintenanceWindows[0].start",
    );
    docs.finish();
}

/// `command` fails, naming `field`.
fn refused(docs: &Docs, site: &Site, command: &str, field: &str) {
    let (out, _) = docs.shell.run(command, site, &[]);
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
    let mut site = Site::new(vec![]);
    let good = docs.shell.file("good-values.yaml");
    std::fs::write(
        &good,
        "settings:\n  maintenanceWindows:\n    - days: [Sat]\n      start: \"02:00\"\n      end: \"04:00\"\n",
    )
    .expect("write");
    let (out, _) = docs.run_text(
        &mut site,
        &command.replace("values.yaml", &good.display().to_string()),
    );
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
        &site,
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

#[test]
fn the_documented_selectors_choose_korifis_apps_or_labelled_namespaces() {
    let mut docs = Docs::new("the_documented_selectors_choose_korifis_apps_or_labelled_namespaces");
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
    let mut site = Site::new(vec![]);
    assert!(
        !selects(&namespace_selector, &json!({})),
        "an unlabelled namespace is not in scope"
    );
    docs.run(
        &mut site,
        "docs/install.md",
        "kubectl label namespace NAMESPACE restage-gate.io/enabled=true",
    );
    let labels = json!(site.namespaces["NAMESPACE"]);
    assert!(selects(&namespace_selector, &labels), "{labels}");
    docs.finish();
}

#[test]
fn removing_the_guard_first_never_refuses_a_bind() {
    let mut docs = Docs::new("removing_the_guard_first_never_refuses_a_bind");
    let mut site = Site::new(vec![app(korifi(), vec![])]);
    docs.run_text(&mut site, "kubectl apply -f policy.yaml -f guard.yaml");
    docs.run(
        &mut site,
        "docs/uninstall.md",
        "kubectl delete clusteradmissionpolicy restage-gate-guard",
    );
    assert_eq!(site.installed(), ["restage-gate"]);
    let c = &mut site.workloads[0];
    assert!(c.bind(&orders_db()));
    held_with_no_restart(c);

    // The other way round, the guard alone refuses the bind.
    let mut guard_alone = app(korifi(), manifests(&["guard.yaml"]));
    assert!(!guard_alone.bind(&orders_db()), "refused");
    assert_eq!(guard_alone.refused[0].policy, "restage-gate-guard");
    docs.finish();
}

#[test]
fn the_contributors_run_command_answers_a_bind_with_a_hold() {
    let mut docs = Docs::new("the_contributors_run_command_answers_a_bind_with_a_hold");
    let mut site = Site::new(vec![]);
    let (out, _) = docs.run(
        &mut site,
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
