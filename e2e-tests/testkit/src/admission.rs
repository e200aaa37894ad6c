//! Admission requests as the API server sends them, for any kind the policy sees.

use serde_json::{json, Value};

/// An admission request for the workload in `new` (or `old`): its group and kind come from the
/// object's `apiVersion` and `kind` (a StatefulSet when it has none).
pub fn request(operation: &str, old: &Value, new: &Value) -> Value {
    let field = |key: &str| [new, old].iter().find_map(|o| o[key].as_str());
    let kind = field("kind").unwrap_or("StatefulSet");
    // `apps/v1` → `apps`; the core group (`v1`) is ""
    let group = field("apiVersion").map_or("apps", |v| v.rsplit_once('/').map_or("", |(g, _)| g));
    request_for(group, kind, operation, old, new)
}

/// An admission request for `group`/`kind`, whatever the objects say.
pub fn request_for(group: &str, kind: &str, operation: &str, old: &Value, new: &Value) -> Value {
    let meta = |key: &str| {
        [new, old]
            .iter()
            .find_map(|o| o["metadata"][key].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let gvk = json!({"group": group, "version": "v1", "kind": kind});
    let resource =
        json!({"group": group, "version": "v1", "resource": format!("{}s", kind.to_lowercase())});
    json!({
        "uid": format!("restage-gate-e2e-{}", operation.to_ascii_lowercase()),
        "kind": gvk,
        "resource": resource,
        "requestKind": gvk,
        "requestResource": resource,
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

/// What Kubewarden hands a policy's `validate`: the settings and the request.
pub fn validation_request(settings: &Value, request: &Value) -> Value {
    json!({"settings": settings, "request": request})
}

/// An AdmissionReview around a request, as the API server sends it.
pub fn review(request: &Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

fn title(operation: &str) -> String {
    let lower = operation.to_ascii_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::unbound;

    #[test]
    fn a_request_names_the_kind_and_resource_of_its_object() {
        for kind in ["StatefulSet", "DaemonSet", "Deployment"] {
            let object = unbound(kind);
            let r = request("UPDATE", &object, &object);
            assert_eq!(
                r["kind"],
                json!({"group": "apps", "version": "v1", "kind": kind})
            );
            assert_eq!(
                r["resource"]["resource"],
                format!("{}s", kind.to_lowercase())
            );
            assert_eq!(r["name"], object["metadata"]["name"]);
            assert_eq!(r["options"]["kind"], "UpdateOptions");
        }
        let r = request("DELETE", &unbound("Deployment"), &Value::Null);
        assert_eq!(r["kind"]["kind"], "Deployment");
    }
}
