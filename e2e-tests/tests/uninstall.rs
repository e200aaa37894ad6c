//! The uninstall procedure of docs/uninstall.md, run as written: every `sh` block of the page,
//! in order, by bash, with a stand-in `kubectl` on the PATH that serves the simulated
//! workloads to `get` and records every other call, which the cluster simulation then performs
//! (`annotate` and `patch` through the admission chain, `delete clusteradmissionpolicy` by
//! taking the policy out of it). jq is the real one.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use restage_gate::markers::HELD_LABEL;
use restage_gate_e2e::cluster::{Cluster, Kind, Mode, Order};
use restage_gate_e2e::host::policy_under_test;
use restage_gate_testkit::fixtures;
use restage_gate_testkit::hold::{control_path, default_control, markers_on};
use restage_gate_testkit::korifi::orders_db;
use serde_json::{json, Value};

const PODS: u32 = 3;

/// The fenced `sh` blocks of the page, in order.
fn procedure() -> Vec<String> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/uninstall.md");
    let text = std::fs::read_to_string(&path).expect("docs/uninstall.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(block), "```") => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            (Some(block), line) => {
                block.push_str(line);
                block.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

const FAKE_KUBECTL: &str = r#"#!/bin/sh
# Stands in for kubectl: records the call (arguments separated by \037, calls by \036) and
# answers `get` with the simulated workloads.
printf '%s\037' "$@" >> "$KUBECTL_CALLS"
printf '\036' >> "$KUBECTL_CALLS"
if [ "$1" = get ]; then
  case " $* " in
    *" -o json "*) cat "$KUBECTL_LIST" ;;
    *) cat "$KUBECTL_TABLE" ;;
  esac
fi
"#;

/// A scratch directory with the stand-in `kubectl`, removed on drop.
struct Shell {
    dir: PathBuf,
}

impl Shell {
    fn new() -> Shell {
        static SHELLS: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "restage-gate-uninstall-{}-{}",
            std::process::id(),
            SHELLS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(dir.join("bin")).expect("scratch directory");
        let kubectl = dir.join("bin/kubectl");
        std::fs::write(&kubectl, FAKE_KUBECTL).expect("stand-in kubectl");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755))
            .expect("executable");
        Shell { dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Runs one block against the workloads as they are now; the kubectl calls it made, each
    /// as its arguments.
    fn run(&self, block: &str, workloads: &[Cluster]) -> Vec<Vec<String>> {
        let held: Vec<Value> = workloads
            .iter()
            .filter(|c| c.is_held())
            .filter_map(|c| c.object.clone())
            .collect();
        let table = if held.is_empty() {
            "No resources found\n".to_string()
        } else {
            held.iter()
                .map(|o| format!("{} {}\n", o["kind"], o["metadata"]["name"]))
                .collect()
        };
        let list = json!({"apiVersion": "v1", "kind": "List", "items": held});
        std::fs::write(self.file("list.json"), list.to_string()).expect("list");
        std::fs::write(self.file("table.txt"), table).expect("table");
        std::fs::write(self.file("calls"), "").expect("calls");
        let path = format!(
            "{}:{}",
            self.file("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", block])
            .env("PATH", path)
            .env("KUBECTL_CALLS", self.file("calls"))
            .env("KUBECTL_LIST", self.file("list.json"))
            .env("KUBECTL_TABLE", self.file("table.txt"))
            .output()
            .expect("bash");
        assert!(
            out.status.success(),
            "the documented block failed:\n{block}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let calls = std::fs::read_to_string(self.file("calls")).expect("calls");
        calls
            .split('\u{1e}')
            .filter(|c| !c.is_empty())
            .map(|c| {
                c.split('\u{1f}')
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .collect()
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// The value after `flag` in a call.
fn flag<'a>(call: &'a [String], flag: &str) -> Option<&'a str> {
    let at = call.iter().position(|a| a == flag)?;
    call.get(at + 1).map(String::as_str)
}

fn is_kind(resource: &str, kind: Kind) -> bool {
    let kind = kind.name().to_lowercase();
    resource == kind || resource == format!("{kind}s")
}

/// Performs a recorded kubectl call on the simulated workloads.
fn perform(call: &[String], workloads: &mut [Cluster]) {
    let verb = call.first().map(String::as_str);
    match verb {
        Some("get") => {}
        Some("annotate") => {
            let resources: Vec<&str> = call[1].split(',').collect();
            assert!(call.iter().any(|a| a == "-A"), "all namespaces: {call:?}");
            let selector = flag(call, "-l").expect("a label selector");
            let (key, value) = selector.split_once('=').expect("key=value selector");
            let (annotation, text) = call[2..]
                .iter()
                .filter(|a| !a.starts_with('-') && a.as_str() != selector)
                .find_map(|a| a.split_once('='))
                .expect("an annotation to set");
            for c in workloads.iter_mut() {
                let object = c.object.clone().unwrap_or_default();
                let selected = object["metadata"]["labels"][key] == json!(value);
                if selected && resources.iter().any(|r| is_kind(r, c.kind)) {
                    assert!(c.annotate(annotation, text), "{call:?}");
                }
            }
        }
        Some("delete") => {
            assert_eq!(call[1..], ["clusteradmissionpolicy", "restage-gate"]);
            for c in workloads.iter_mut() {
                c.uninstall();
            }
        }
        Some("patch") => {
            assert_eq!(flag(call, "--type"), Some("merge"), "{call:?}");
            let patch: Value =
                serde_json::from_str(flag(call, "-p").expect("a patch")).expect("JSON patch");
            let namespace = flag(call, "-n").expect("a namespace");
            let target = workloads.iter_mut().find(|c| {
                let object = c.object.clone().unwrap_or_default();
                is_kind(&call[1], c.kind)
                    && object["metadata"]["name"] == json!(call[2])
                    && object["metadata"]["namespace"] == json!(namespace)
            });
            let target = target.unwrap_or_else(|| panic!("no such workload: {call:?}"));
            assert!(target.merge_patch(&patch), "{call:?}");
        }
        _ => panic!("the procedure runs a kubectl command the simulation does not know: {call:?}"),
    }
}

/// The control the workload was created with.
fn original_control(kind: Kind) -> Value {
    fixtures::unbound(kind.name())
        .pointer(&control_path(kind.name()))
        .cloned()
        .unwrap_or_else(|| default_control(kind.name()))
}

fn jq_is_installed() -> bool {
    Command::new("jq")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn workload(kind: Kind) -> Cluster {
    Cluster::new(
        policy_under_test(),
        kind,
        Mode::Defer,
        Order::PolicyFirst,
        json!({}),
        PODS,
    )
}

#[test]
fn the_documented_uninstall_releases_every_held_workload_once() {
    assert!(
        jq_is_installed(),
        "the documented procedure uses jq: apt-get install jq"
    );
    let blocks = procedure();
    assert_eq!(blocks.len(), 4, "release, remove, restore, check");
    let mut workloads: Vec<Cluster> = Kind::every().iter().copied().map(workload).collect();
    // bound to a running app after the policy was installed: held
    for c in workloads.iter_mut() {
        assert!(c.bind(&orders_db()));
        assert!(c.is_held(), "{}", c.kind.name());
    }
    // a second Deployment, bound between steps 1 and 2
    workloads.push(workload(Kind::Deployment).named("orders-worker"));

    let shell = Shell::new();
    let release = shell.run(&blocks[0], &workloads);
    assert!(release.iter().any(|c| c[0] == "annotate"), "{release:?}");
    for call in &release {
        perform(call, &mut workloads);
    }
    for c in &workloads[..3] {
        assert!(!c.is_held(), "{}: released while installed", c.kind.name());
    }
    let late = workloads.last_mut().expect("late");
    assert!(late.bind(&orders_db()));
    assert!(late.is_held(), "held between the steps");

    for block in &blocks[1..] {
        for call in shell.run(block, &workloads) {
            perform(&call, &mut workloads);
        }
    }

    for c in &workloads {
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
    let check = shell.run(&blocks[3], &workloads);
    assert_eq!(check.len(), 1, "one kubectl get");
    assert_eq!(
        std::fs::read_to_string(shell.file("table.txt")).expect("table"),
        "No resources found\n"
    );
}

/// The order matters: while the policy is installed, the restore of step 3 is undone (the
/// policy re-applies its markers to a write that drops them), which is why step 1 releases
/// through the policy.
#[test]
fn the_restore_alone_does_not_work_while_the_policy_is_installed() {
    assert!(jq_is_installed(), "apt-get install jq");
    let blocks = procedure();
    let mut workloads = vec![workload(Kind::StatefulSet)];
    assert!(workloads[0].bind(&orders_db()));
    let shell = Shell::new();
    for call in shell.run(&blocks[2], &workloads) {
        perform(&call, &mut workloads);
    }
    assert!(workloads[0].is_held(), "still held");
    assert_eq!(workloads[0].rollouts.len(), 0);
}
