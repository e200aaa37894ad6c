//! The uninstall procedure of docs/uninstall.md, run as written: every `sh` block of the page,
//! in order, by bash, with the docs' stand-in `kubectl` (`restage_gate_e2e::docs`), whose
//! calls the cluster simulation performs: `annotate` and `patch` through the admission chain,
//! `delete clusteradmissionpolicy` by taking the policy out of it, `delete -f
//! window-release.yaml` by removing the maintenance-window job's objects. jq is the real one.
//! (The page's `console` block, removing the guard, is optional and runs in operator_docs.rs.)

use std::process::Command;

use restage_gate::markers::HELD_LABEL;
use restage_gate_e2e::cluster::{every_kind, Cluster, Kind, Order};
use restage_gate_e2e::docs::{self, commands_of, fenced_blocks, names, Shell, Site};
use restage_gate_e2e::host::policy_under_test;
use restage_gate_release::repository;
use restage_gate_testkit::hold::markers_on;
use restage_gate_testkit::korifi::orders_db;
use serde_json::Value;

const PODS: u32 = 3;

/// The page's steps, as its `sh` blocks in order.
const STOP_JOB: usize = 0;
const RELEASE: usize = 1;
const REMOVE: usize = 2;
const RESTORE: usize = 3;
const CHECK: usize = 4;

const WINDOW_JOB: &str = "window-release.yaml";

/// The `sh` blocks of the page, in order.
fn procedure() -> Vec<String> {
    let page =
        repository::read(&docs::root(), "docs/uninstall.md").unwrap_or_else(|e| panic!("{e}"));
    fenced_blocks(&page, &["sh"])
}

/// The control the workload was created with.
fn original_control(kind: Kind) -> Value {
    let w = kind.workload();
    w.control(&kind.fixture())
        .cloned()
        .unwrap_or_else(|| w.default_control())
}

fn jq_is_installed() -> bool {
    Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn workload(kind: Kind) -> Cluster {
    Cluster::with_policies(policy_under_test(), kind, Order::PolicyFirst, vec![], PODS)
}

/// `workloads` with the defer policy of policy.yaml installed, as the README installs it.
fn installed(shell: &Shell, workloads: Vec<Cluster>) -> Site {
    let mut site = Site::new(workloads);
    shell.perform("kubectl apply -f policy.yaml", &mut site);
    assert_eq!(site.installed(), ["restage-gate"]);
    site
}

/// The API groups of `kinds`.
fn groups(kinds: &[Kind]) -> usize {
    let groups: std::collections::BTreeSet<&str> = kinds
        .iter()
        .map(|k| k.workload().declared().group)
        .collect();
    groups.len()
}

#[test]
fn the_documented_uninstall_releases_every_held_workload_once() {
    assert!(
        jq_is_installed(),
        "the documented procedure uses jq: apt-get install jq"
    );
    let blocks = procedure();
    assert_eq!(
        blocks.len(),
        5,
        "stop the window-release job, release, remove, restore, check"
    );
    let kinds = every_kind();
    let mut workloads: Vec<Cluster> = kinds.iter().copied().map(workload).collect();
    // one of each kind bound between the release and the policy's removal
    let late = workloads.len();
    workloads.extend(
        kinds
            .iter()
            .map(|&kind| workload(kind).named("orders-worker")),
    );
    assert_eq!(workloads.len(), 2 * late, "two workloads of every kind");
    let shell = Shell::new();
    let mut site = installed(&shell, workloads);
    let install_job = commands_of("docs/install.md")
        .into_iter()
        .find(|c| names("kubectl apply -f window-release.yaml", &c.text))
        .expect("docs/install.md installs the window job")
        .text;
    shell.perform(&install_job, &mut site);
    assert!(!site.objects_of(WINDOW_JOB).is_empty(), "the job installed");
    // bound to a running app after the policy was installed: held
    for c in &mut site.workloads[..late] {
        assert!(c.bind(&orders_db()));
        assert!(c.is_held(), "{}", c.kind.name());
    }

    let (_, stop) = shell.perform(&blocks[STOP_JOB], &mut site);
    assert_eq!(stop.len(), 1, "{stop:?}");
    assert_eq!(
        site.objects_of(WINDOW_JOB),
        Vec::<String>::new(),
        "every object of the window job removed before anything is released"
    );
    let (_, release) = shell.perform(&blocks[RELEASE], &mut site);
    assert!(release.iter().any(|c| c[0] == "annotate"), "{release:?}");
    for c in &site.workloads[..late] {
        assert!(!c.is_held(), "{}: released while installed", c.kind.name());
    }
    for c in &mut site.workloads[late..] {
        assert!(c.bind(&orders_db()));
        assert!(c.is_held(), "{}: held between the steps", c.kind.name());
    }

    assert_eq!(
        site.objects_of(WINDOW_JOB),
        Vec::<String>::new(),
        "the window job does not outlive the policy"
    );
    for block in &blocks[REMOVE..CHECK] {
        shell.perform(block, &mut site);
    }
    assert!(site.installed().is_empty(), "{:?}", site.installed());

    assert_eq!(site.workloads.len(), 2 * late, "every workload checked");
    for c in &site.workloads {
        let kind = c.kind.name();
        let object = c.object.clone().unwrap_or_default();
        assert!(!c.is_held(), "{kind}: nothing held");
        assert_eq!(markers_on(&object), Vec::<String>::new(), "{kind}: markers");
        assert_eq!(c.control(), original_control(c.kind), "{kind}: control");
        assert_eq!(c.rollouts.len(), 1, "{kind}: exactly one rollout");
        assert_eq!(c.restarts, PODS as usize, "{kind}: every pod once");
        assert!(
            c.pod_bindings().iter().all(|b| b == &["orders-db"]),
            "{kind}: every pod has the held binding"
        );
        assert!(c.stuck.is_empty(), "{kind}: {:?}", c.stuck);
        assert!(object["metadata"]["labels"].get(HELD_LABEL).is_none());
    }
    let (printed, check) = shell.perform(&blocks[CHECK], &mut site);
    let gets = check.iter().filter(|c| c[0] == "get").count();
    assert_eq!(gets, groups(&kinds), "one kubectl get per API group");
    assert_eq!(printed, "No resources found\n".repeat(gets));
}

/// The order matters: while the policy is installed, the restore of step 4 is undone (the
/// policy re-applies its markers to a write that drops them), which is why step 2 releases
/// through the policy.
#[test]
fn the_restore_alone_does_not_work_while_the_policy_is_installed() {
    assert!(jq_is_installed(), "apt-get install jq");
    let blocks = procedure();
    let shell = Shell::new();
    let mut site = installed(&shell, vec![workload(every_kind()[0])]);
    assert!(site.workloads[0].bind(&orders_db()));
    let (_, calls) = shell.perform(&blocks[RESTORE], &mut site);
    assert!(calls.iter().any(|c| c[0] == "patch"), "{calls:?}");
    assert!(site.workloads[0].is_held(), "still held");
    assert_eq!(site.workloads[0].rollouts.len(), 0);
}

/// Where the cluster serves none of the kinds' API groups (a custom resource not installed),
/// every step runs without a call for them, and succeeds.
#[test]
fn a_group_the_cluster_does_not_serve_is_skipped_by_every_step() {
    assert!(jq_is_installed(), "apt-get install jq");
    let shell = Shell::new();
    let mut site = installed(&shell, vec![]);
    for block in procedure() {
        let (_, calls) = shell.perform(&block, &mut site);
        assert!(
            calls
                .iter()
                .all(|c| !["annotate", "get", "patch"].contains(&c[0].as_str())),
            "{calls:?}"
        );
    }
}
