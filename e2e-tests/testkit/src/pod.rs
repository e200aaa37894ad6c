//! What a pod created from a pod template needs before it can start.

use serde_json::Value;

/// The secrets a template mounts: `secret` volumes and the secret sources of `projected` ones.
/// A pod created from it hangs in `ContainerCreating` while one of them does not exist.
pub fn mounted_secrets(template: &Value) -> Vec<String> {
    let volumes = template.pointer("/spec/volumes").and_then(Value::as_array);
    let mut out = Vec::new();
    for volume in volumes.into_iter().flatten() {
        let plain = volume.pointer("/secret/secretName").and_then(Value::as_str);
        out.extend(plain.map(str::to_string));
        let sources = volume
            .pointer("/projected/sources")
            .and_then(Value::as_array);
        let projected = sources
            .into_iter()
            .flatten()
            .filter_map(|source| source.pointer("/secret/name").and_then(Value::as_str));
        out.extend(projected.map(str::to_string));
    }
    out
}
