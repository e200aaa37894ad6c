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

/// `sts` with the `metadata.managedFields` the API server keeps and sends with it: Korifi's
/// controller owning the metadata and spec it wrote (in server-side apply's `fieldsV1` form)
/// and the StatefulSet controller owning the status. Often the largest part of the metadata.
pub fn with_managed_fields(mut sts: Value) -> Value {
    let api_version = sts["apiVersion"].clone();
    let entry = |manager: &str, subresource: Option<&str>, fields: Value| {
        let mut entry = json!({"manager": manager, "operation": "Update",
            "apiVersion": api_version, "time": "2026-12-01T09:00:00Z",
            "fieldsType": "FieldsV1", "fieldsV1": fields});
        if let Some(subresource) = subresource {
            entry["subresource"] = json!(subresource);
        }
        entry
    };
    let owned = json!({
        "f:metadata": {
            "f:labels": fields_v1(&sts["metadata"]["labels"]),
            "f:annotations": fields_v1(&sts["metadata"]["annotations"]),
            "f:ownerReferences": fields_v1(&sts["metadata"]["ownerReferences"]),
        },
        "f:spec": fields_v1(&sts["spec"]),
    });
    let status = json!({"f:status": {"f:availableReplicas": {}, "f:currentReplicas": {},
        "f:currentRevision": {}, "f:observedGeneration": {}, "f:readyReplicas": {},
        "f:replicas": {}, "f:updateRevision": {}, "f:updatedReplicas": {}}});
    sts["metadata"]["managedFields"] = json!([
        entry("korifi-controllers", None, owned),
        entry("kube-controller-manager", Some("status"), status),
    ]);
    sts
}

/// The `fieldsV1` set of the fields `value` sets: `f:` for an object's members, `k:` for a
/// list item keyed by its name (or uid), `v:` for a list of plain values.
fn fields_v1(value: &Value) -> Value {
    match value {
        Value::Object(members) => members
            .iter()
            .map(|(k, v)| (format!("f:{k}"), fields_v1(v)))
            .collect::<serde_json::Map<_, _>>()
            .into(),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                let key = match ["name", "uid", "containerPort"]
                    .iter()
                    .find_map(|k| Some((*k, item.get(*k)?)))
                {
                    Some((k, v)) => format!("k:{}", json!({ k: v })),
                    None => format!("v:{item}"),
                };
                let mut fields = fields_v1(item);
                if let Value::Object(members) = &mut fields {
                    members.insert(".".into(), json!({}));
                }
                (key, fields)
            })
            .collect::<serde_json::Map<_, _>>()
            .into(),
        _ => json!({}),
    }
}
