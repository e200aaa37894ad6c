//! The writes `kubectl` makes to a workload.

use serde_json::{json, Value};

/// `kubectl rollout restart`: a new `restartedAt` template annotation.
pub fn rollout_restart(object: &mut Value, at: &str) {
    object["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] =
        json!(at);
}

/// `kubectl rollout resume deployment/NAME`: `spec.paused` false.
pub fn rollout_resume(deployment: &mut Value) {
    deployment["spec"]["paused"] = json!(false);
}

/// `kubectl annotate KIND NAME key=value`.
pub fn annotate(object: &mut Value, key: &str, value: &str) {
    object["metadata"]["annotations"][key] = json!(value);
}
