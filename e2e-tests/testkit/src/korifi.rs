//! Korifi v0.14 objects and the writes Korifi makes to an app's StatefulSet, modelled on
//! `fixtures/korifi-v0.14/`.

use serde_json::{json, Value};

use crate::fixtures::fixture;
use crate::projector::Binding;

/// The app's StatefulSet before any binding.
pub fn unbound() -> Value {
    fixture("statefulset-0-unbound.json")
}

/// The app's StatefulSet with the user-provided service bound, as the projector left it.
pub fn bound() -> Value {
    fixture("statefulset-1-bound-upsi.json")
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

/// A new process version (`cf push --strategy rolling`, `cf restage --strategy rolling`): the
/// `version` label and annotation, and from version 1 on a new droplet.
pub fn new_version(sts: &mut Value, version: u32) {
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
}

/// The runner's desired StatefulSet for a process version at `replicas` instances.
pub fn desired(version: u32, replicas: u32) -> Value {
    let mut sts = unbound();
    new_version(&mut sts, version);
    sts["spec"]["replicas"] = json!(replicas);
    sts
}
