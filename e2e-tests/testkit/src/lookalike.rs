//! The app's own configuration that only looks like a projection: its own
//! `SERVICE_BINDING_ROOT`, and volumes whose names resemble binding volumes. A change to any of
//! them is a restage.

use serde_json::{json, Value};

use crate::edit::push;

const FIRST_CONTAINER_ENV: &str = "/spec/template/spec/containers/0/env";

/// Declares the app's own `SERVICE_BINDING_ROOT` in its first container: the projector then
/// mounts bindings under it and never rewrites it.
pub fn declare_root(object: &mut Value, root: &str) {
    push(
        object,
        FIRST_CONTAINER_ENV,
        json!({"name": "SERVICE_BINDING_ROOT", "value": root}),
    );
}

/// Changes the first `SERVICE_BINDING_ROOT` of the first container to `root` (a value), or
/// removes it (`None`).
pub fn change_root(object: &mut Value, root: Option<Value>) {
    let Some(env) = object
        .pointer_mut(FIRST_CONTAINER_ENV)
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    let at = env.iter().position(|e| e["name"] == "SERVICE_BINDING_ROOT");
    match (at, root) {
        (Some(i), Some(root)) => env[i] = root,
        (Some(i), None) => {
            env.remove(i);
        }
        (None, Some(root)) => env.push(root),
        (None, None) => {}
    }
}

/// Volumes of the app's own named like binding volumes: a non-uid suffix, a uid on a
/// `configMap` volume, a VMware-style name on a plain `secret` volume.
pub fn volumes() -> Vec<(&'static str, Value)> {
    vec![
        (
            "servicebinding-overrides",
            json!({"name": "servicebinding-overrides", "projected": {"sources": [{"configMap": {"name": "overrides"}}]}}),
        ),
        (
            "servicebinding-<uid> as a configMap",
            json!({"name": "servicebinding-7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d", "configMap": {"name": "settings"}}),
        ),
        (
            "binding-<40 hex> as a secret",
            json!({"name": "binding-0123456789abcdef0123456789abcdef01234567", "secret": {"secretName": "s"}}),
        ),
    ]
}

/// Adds `volume` and a mount of it in the first container.
pub fn mount(object: &mut Value, volume: &Value) {
    push(object, "/spec/template/spec/volumes", volume.clone());
    push(
        object,
        "/spec/template/spec/containers/0/volumeMounts",
        json!({"name": volume["name"], "mountPath": "/bindings/overrides"}),
    );
}
