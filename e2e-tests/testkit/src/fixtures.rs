//! The objects tests start from (`e2e-tests/fixtures/`): Korifi v0.14's StatefulSet and
//! ServiceBindings, and a DaemonSet and a Deployment as the servicebinding.io runtime finds them.

use std::path::PathBuf;

use serde_json::Value;

use crate::projector::Binding;

pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// A fixture by its path under `fixtures/`, e.g. `workloads/deployment-unbound.json`; a bare
/// name is one of the Korifi objects. The fixtures ship with the repository, so a missing one
/// is a broken checkout and worth a loud failure.
pub fn fixture(name: &str) -> Value {
    let name = if name.contains('/') {
        name.to_string()
    } else {
        format!("korifi-v0.14/{name}")
    };
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn daemonset() -> Value {
    fixture("workloads/daemonset-unbound.json")
}

pub fn deployment() -> Value {
    fixture("workloads/deployment-unbound.json")
}

/// A ServiceBinding `orders-db` for the DaemonSet and Deployment fixtures.
pub fn orders_binding() -> Binding {
    Binding::new(
        "1b2c3d4e-5f60-4718-829a-b0c1d2e3f405",
        "orders-db",
        "orders-db-secret",
    )
}

/// A ServiceBinding `cache`.
pub fn cache_binding() -> Binding {
    Binding::new(
        "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
        "cache",
        "cache-secret",
    )
}
