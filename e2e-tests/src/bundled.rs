//! The example requests `make demo` and the bats suite evaluate (`e2e-tests/requests/*.json`): one app
//! through a bind, a second bind, Korifi's runner writes, a rolling deploy and a scale; then a
//! DaemonSet bind, a Deployment bind, a Deployment unbind, `kubectl rollout resume` of a held
//! Deployment and the window job's write to a held DaemonSet. Also the held workloads the bats
//! suite gives the window job's write to (`e2e-tests/fixtures/held/`).

use std::path::PathBuf;

use restage_gate::markers::{RELEASE_ANNOTATION, RELEASE_IN_WINDOW};
use restage_gate_testkit::admission::{request, review};
use restage_gate_testkit::edit::with;
use restage_gate_testkit::fixtures::{self, daemonset, deployment, orders_binding};
use restage_gate_testkit::hold::held;
use restage_gate_testkit::korifi::{desired, orders_db, runner_write, unbound, upsi};
use restage_gate_testkit::kubectl::{annotate, rollout_resume};
use restage_gate_testkit::lookup;
use restage_gate_testkit::projector::{bind, project, unbind};
use serde_json::{json, Value};

const HELD_SINCE: &str = "2026-12-01T09:00:00Z";

/// `e2e-tests/requests/`, where the example requests are committed.
pub fn requests_dir() -> PathBuf {
    restage_gate_release::repository::root().join("e2e-tests/requests")
}

/// The committed example requests, in order.
pub fn bundled_request_paths() -> Vec<PathBuf> {
    let dir = requests_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| Some(e.ok()?.path()))
        .collect();
    paths.sort();
    paths
}

/// A workload of `kind` held with the `orders-db` binding pending, as restage-gate leaves it.
pub fn held_workload(kind: &dyn restage_gate::workload::Workload) -> Value {
    held_from(lookup::unbound(kind))
}

/// `unbound` bound to `orders-db` and held with it pending, as restage-gate leaves it.
pub fn held_from(unbound: Value) -> Value {
    let binding = orders_binding();
    let pending = format!("+{}", binding.name);
    held(bind(unbound, &binding), &pending, HELD_SINCE)
}

/// A workload after the window job's write (window-release.yaml): `kubectl annotate
/// statefulsets,daemonsets,deployments --all-namespaces -l restage-gate.io/held=true
/// restage-gate.io/release=window --overwrite`.
pub fn window_job_write(object: &Value) -> Value {
    with(object.clone(), |o| {
        annotate(o, RELEASE_ANNOTATION, RELEASE_IN_WINDOW)
    })
}

/// `e2e-tests/fixtures/held/`: a held workload of every kind, `<kind>.json`, and in
/// `release-window/<kind>.json` the same after the window job's write, as `kubectl annotate
/// --local -f <kind>.json restage-gate.io/release=window --overwrite -o json` writes it (the bats
/// suite checks that it does, and uses the recording where kubectl is not installed).
pub fn held_fixtures() -> Vec<(PathBuf, Value)> {
    let dir = fixtures::dir().join("held");
    lookup::every()
        .into_iter()
        .flat_map(|d| {
            let file = format!("{}.json", d.name().to_lowercase());
            let held = held_from(d.fixture());
            let annotated = window_job_write(&held);
            [
                (dir.join(&file), held),
                (dir.join("release-window").join(&file), annotated),
            ]
        })
        .collect()
}

/// (file name, what restage-gate decides in defer mode, AdmissionReview).
pub fn requests() -> Vec<(&'static str, &'static str, Value)> {
    let bound = with(unbound(), |s| project(s, &upsi()));
    let both = with(bound.clone(), |s| project(s, &orders_db()));
    let upsi_pending = format!("+{}", upsi().name);
    let both_pending = format!("{upsi_pending} +orders-db");
    let held_once = held(bound.clone(), &upsi_pending, HELD_SINCE);
    let held_twice = held(both.clone(), &both_pending, HELD_SINCE);
    let update = |old: &Value, new: &Value| review(&request("UPDATE", old, new));
    let deployment_bound = bind(deployment(), &orders_binding());
    let deployment_held = held_from(deployment());
    let daemonset_held = held_from(daemonset());
    vec![
        ("01-bind.json", "held", update(&unbound(), &bound)),
        (
            "02-second-bind-while-held.json",
            "held",
            update(
                &held_once,
                &with(held_once.clone(), |s| project(s, &orders_db())),
            ),
        ),
        (
            "03-runner-patch-while-held.json",
            "held",
            update(&held_twice, &runner_write(&held_twice, &desired(0, 1))),
        ),
        (
            "04-rolling-deploy-releases-hold.json",
            "released",
            update(&held_twice, &runner_write(&held_twice, &desired(1, 1))),
        ),
        (
            "05-scale.json",
            "accepted",
            update(
                &both,
                &with(both.clone(), |s| s["spec"]["replicas"] = json!(3)),
            ),
        ),
        (
            "06-daemonset-bind.json",
            "held",
            update(&daemonset(), &bind(daemonset(), &orders_binding())),
        ),
        (
            "07-deployment-bind.json",
            "held",
            update(&deployment(), &deployment_bound),
        ),
        (
            "08-deployment-unbind.json",
            "rolling",
            update(
                &deployment_bound,
                &unbind(deployment_bound.clone(), &orders_binding()),
            ),
        ),
        (
            "09-deployment-rollout-resume.json",
            "released",
            update(
                &deployment_held,
                &with(deployment_held.clone(), rollout_resume),
            ),
        ),
        (
            // without a maintenance window, the write never releases
            "10-window-release.json",
            "held",
            update(&daemonset_held, &window_job_write(&daemonset_held)),
        ),
    ]
}
