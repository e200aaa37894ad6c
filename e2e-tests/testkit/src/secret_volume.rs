//! A binding runtime that restage-gate recognises only through the operator's
//! `extraVolumePrefixes`: it mounts each binding as a plain `secret` volume named with that
//! prefix, in every container.

use serde_json::{json, Value};

use crate::edit::push;

/// The volume-name prefix the settings below declare.
pub const PREFIX: &str = "acme-binding-";

/// Settings in `mode` that recognise these volumes.
pub fn settings(mode: &str) -> Value {
    json!({"mode": mode, "extraVolumePrefixes": [PREFIX]})
}

fn volume_name(name: &str) -> String {
    format!("{PREFIX}{name}")
}

/// Mounts `secret` as binding `name` at `/acme/<name>` in every container.
pub fn attach(mut workload: Value, name: &str, secret: &str) -> Value {
    let volume = volume_name(name);
    push(
        &mut workload,
        "/spec/template/spec/volumes",
        json!({"name": volume, "secret": {"secretName": secret}}),
    );
    let containers = workload
        .pointer("/spec/template/spec/containers")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    for i in 0..containers {
        push(
            &mut workload,
            &format!("/spec/template/spec/containers/{i}/volumeMounts"),
            json!({"name": volume, "mountPath": format!("/acme/{name}"), "readOnly": true}),
        );
    }
    workload
}

/// Points binding `name`'s volume at `secret` instead.
pub fn switch_secret(mut workload: Value, name: &str, secret: &str) -> Value {
    let volume = volume_name(name);
    let volumes = workload
        .pointer_mut("/spec/template/spec/volumes")
        .and_then(Value::as_array_mut)
        .expect("a volume list");
    for v in volumes.iter_mut().filter(|v| v["name"] == volume.as_str()) {
        v["secret"]["secretName"] = json!(secret);
    }
    workload
}

fn list<'a>(value: &'a mut Value, key: &str) -> Option<&'a mut Vec<Value>> {
    value.get_mut(key).and_then(Value::as_array_mut)
}

/// Removes binding `name`'s volume and its mounts.
pub fn detach(mut workload: Value, name: &str) -> Value {
    let volume = volume_name(name);
    let named = |v: &Value| v["name"] == volume.as_str();
    let Some(spec) = workload.pointer_mut("/spec/template/spec") else {
        return workload;
    };
    if let Some(volumes) = list(spec, "volumes") {
        volumes.retain(|v| !named(v));
    }
    for key in ["initContainers", "containers"] {
        for c in list(spec, key).into_iter().flatten() {
            if let Some(mounts) = list(c, "volumeMounts") {
                mounts.retain(|m| !named(m));
            }
        }
    }
    workload
}
