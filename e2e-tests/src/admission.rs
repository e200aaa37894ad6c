//! Admission requests as the API server sends them. Reading the answers is
//! `restage_gate_evaluation::admission`, which every runner of the module shares.

use serde_json::{json, Value};

/// An `apps/v1` StatefulSet admission request.
pub fn statefulset_request(operation: &str, old: &Value, new: &Value) -> Value {
    let meta = |key: &str| {
        [new, old]
            .iter()
            .find_map(|o| {
                o.pointer(&format!("/metadata/{key}"))
                    .and_then(Value::as_str)
            })
            .unwrap_or_default()
            .to_string()
    };
    let gvk = json!({"group": "apps", "version": "v1", "kind": "StatefulSet"});
    json!({
        "uid": format!("restage-gate-e2e-{}", operation.to_ascii_lowercase()),
        "kind": gvk,
        "resource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
        "requestKind": gvk,
        "requestResource": {"group": "apps", "version": "v1", "resource": "statefulsets"},
        "name": meta("name"),
        "namespace": meta("namespace"),
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:cf:korifi-controllers-controller-manager",
            "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": new,
        "oldObject": old,
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": format!("{}Options", title(operation))},
    })
}

fn title(operation: &str) -> String {
    let lower = operation.to_ascii_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// An AdmissionReview around a request, as the API server sends it.
pub fn review(request: &Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}
