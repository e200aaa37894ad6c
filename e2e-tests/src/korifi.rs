//! Korifi v0.14 objects and the writes Korifi, kubectl and the policy make to an app's
//! StatefulSet, modelled on `fixtures/korifi-v0.14/`.

use std::path::PathBuf;

use restage_gate::workload::{self, StatefulSet};
use serde_json::{json, Value};

use crate::projector::Binding;

pub fn fixtures_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/korifi-v0.14")
}

/// A fixture object; the fixtures ship with the repository, so a missing one is a broken
/// checkout and worth a loud failure.
pub fn fixture(name: &str) -> Value {
    let path = fixtures_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The app's StatefulSet before any binding.
pub fn unbound() -> Value {
    fixture("statefulset-0-unbound.json")
}

/// The user-provided service binding (named by its guid, as `cf bind-service` does).
pub fn upsi() -> Binding {
    Binding::from_service_binding(&fixture("servicebinding-user-provided.json"))
        .expect("reference ServiceBinding")
}

/// The managed `orders-db` binding.
pub fn orders_db() -> Binding {
    Binding::from_service_binding(&fixture("servicebinding-managed-orders-db.json"))
        .expect("reference ServiceBinding")
}

/// Korifi's statefulset-runner CreateOrPatch: its full desired spec, labels and annotations,
/// which hold no projection and no restage-gate marker; the API server defaults the strategy.
/// Fields the runner does not own (name, uid, resourceVersion, generation, status) stay.
pub fn runner_write(current: &Value, desired: &Value) -> Value {
    let mut next = current.clone();
    next["spec"] = desired["spec"].clone();
    for key in ["labels", "annotations"] {
        next["metadata"][key] = desired["metadata"][key].clone();
    }
    next
}

/// The runner's desired StatefulSet for a process version (`cf push --strategy rolling` and
/// `cf restage --strategy rolling` bump it and bring a new droplet).
pub fn desired(version: u32, replicas: u32) -> Value {
    let mut sts = unbound();
    let v = json!(version.to_string());
    for at in ["/metadata", "/spec/template/metadata"] {
        if let Some(meta) = sts.pointer_mut(at) {
            meta["labels"]["korifi.cloudfoundry.org/version"] = v.clone();
            meta["annotations"]["korifi.cloudfoundry.org/version"] = v.clone();
        }
    }
    if version > 0 {
        sts["spec"]["template"]["spec"]["containers"][0]["image"] = json!(format!(
            "registry.example.com/korifi/0f8e7d6c-droplets@sha256:{version:064x}"
        ));
    }
    sts["spec"]["replicas"] = json!(replicas);
    sts
}

/// `kubectl rollout restart`.
pub fn rollout_restart(sts: &mut Value, at: &str) {
    sts["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] =
        json!(at);
}

/// The workload as restage-gate leaves it when it holds `pending` since `since`, with the
/// API server's default strategy remembered.
pub fn held(mut sts: Value, pending: &str, since: &str) -> Value {
    let hold = workload::default_hold(&StatefulSet, since, pending);
    // fixtures are well-formed StatefulSets, which always take the markers
    workload::hold(&mut sts, &StatefulSet, &hold).expect("a StatefulSet takes the markers");
    sts
}
