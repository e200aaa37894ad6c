//! A model of the servicebinding.io projector (servicebinding/runtime, package `projector`):
//! what projecting a ServiceBinding into a workload writes, and what unprojecting removes.
//! Shared by the policy's unit tests and the e2e simulation, so both speak the same format.

use serde_json::{json, Map, Value};

pub const ROOT: &str = "/bindings";

/// What the projector needs of a ServiceBinding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    /// `metadata.uid`
    pub uid: String,
    /// `spec.name`: the directory under `$SERVICE_BINDING_ROOT`
    pub name: String,
    /// `status.binding.name`: the binding secret
    pub secret: String,
    pub type_: Option<String>,
    pub provider: Option<String>,
    /// `spec.env`: (env var name, secret key); keys `type` and `provider` read annotations.
    pub env: Vec<(String, String)>,
}

impl Binding {
    pub fn new(uid: &str, name: &str, secret: &str) -> Self {
        Binding {
            uid: uid.into(),
            name: name.into(),
            secret: secret.into(),
            type_: None,
            provider: None,
            env: Vec::new(),
        }
    }

    /// Reads a `servicebinding.io/v1beta1` ServiceBinding object.
    pub fn from_service_binding(sb: &Value) -> Option<Self> {
        let text = |p: &str| sb.pointer(p).and_then(Value::as_str).map(str::to_string);
        let mut binding = Binding::new(
            &text("/metadata/uid")?,
            &text("/spec/name")?,
            &text("/status/binding/name")?,
        );
        binding.type_ = text("/spec/type");
        binding.provider = text("/spec/provider");
        if let Some(Value::Array(env)) = sb.pointer("/spec/env") {
            binding.env = env
                .iter()
                .filter_map(|e| {
                    Some((
                        e.get("name")?.as_str()?.into(),
                        e.get("key")?.as_str()?.into(),
                    ))
                })
                .collect();
        }
        Some(binding)
    }

    pub fn volume_name(&self) -> String {
        format!("servicebinding-{}", self.uid)
    }

    /// The projector's template annotation recording `what` (`secret`, `type`, `provider`).
    pub fn annotation(&self, what: &str) -> String {
        format!("projector.servicebinding.io/{what}-{}", self.uid)
    }

    fn field_path(&self, what: &str) -> String {
        format!("metadata.annotations['{}']", self.annotation(what))
    }
}

const MAPPING: &str = r#"{"versions":[{"version":"*","annotations":".spec.template.metadata.annotations","containers":[{"path":".spec.template.spec.initContainers[*]","name":".name","env":".env","volumeMounts":".volumeMounts"},{"path":".spec.template.spec.containers[*]","name":".name","env":".env","volumeMounts":".volumeMounts"}],"volumes":".spec.template.spec.volumes"}]}"#;

/// Projects `binding` into a workload (any kind with a pod template). Projecting twice changes
/// nothing.
pub fn project(workload: &mut Value, binding: &Binding) {
    unproject(workload, &binding.uid, false);
    let Some(template) = workload.pointer_mut("/spec/template") else {
        return;
    };
    let annotations = object_at(template, "metadata", "annotations");
    annotations.insert(binding.annotation("secret"), json!(binding.secret));
    let mut items = Vec::new();
    for (what, value) in [("type", &binding.type_), ("provider", &binding.provider)] {
        if let Some(value) = value {
            annotations.insert(binding.annotation(what), json!(value));
            items.push(json!({"path": what, "fieldRef": {"apiVersion": "v1", "fieldPath": binding.field_path(what)}}));
        }
    }
    let mut sources = vec![json!({"secret": {"name": binding.secret}})];
    if !items.is_empty() {
        sources.push(json!({"downwardAPI": {"items": items}}));
    }
    let volume = json!({"name": binding.volume_name(),
        "projected": {"defaultMode": 420, "sources": sources}});
    let Some(spec) = template.get_mut("spec") else {
        return;
    };
    push_sorted(list_at(spec, "volumes"), volume);
    for key in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get_mut(key) else {
            continue;
        };
        for container in containers {
            let env = list_at(container, "env");
            // the container's own root when it declares one; the projector's otherwise
            let root = match env.iter().find(|e| e["name"] == "SERVICE_BINDING_ROOT") {
                Some(own) => own["value"].as_str().unwrap_or(ROOT).to_string(),
                None => {
                    env.push(json!({"name": "SERVICE_BINDING_ROOT", "value": ROOT}));
                    ROOT.to_string()
                }
            };
            let mount = json!({"name": binding.volume_name(), "readOnly": true,
                "mountPath": format!("{}/{}", root.trim_end_matches('/'), binding.name)});
            push_sorted(list_at(container, "volumeMounts"), mount);
            let env = list_at(container, "env");
            for (name, key) in &binding.env {
                let value_from = match key.as_str() {
                    "type" | "provider" => {
                        json!({"fieldRef": {"apiVersion": "v1", "fieldPath": binding.field_path(key)}})
                    }
                    _ => json!({"secretKeyRef": {"name": binding.secret, "key": key}}),
                };
                env.retain(|e| e["name"] != json!(name));
                env.push(json!({"name": name, "valueFrom": value_from}));
            }
        }
    }
    let mapping = object_at(workload, "metadata", "annotations");
    mapping.insert(binding.annotation("mapping"), json!(MAPPING));
}

/// `object` with `binding` projected: what the servicebinding reconciler writes for a bind.
pub fn bind(mut object: Value, binding: &Binding) -> Value {
    project(&mut object, binding);
    object
}

/// `object` with `binding` unprojected: what the reconciler writes for an unbind.
pub fn unbind(mut object: Value, binding: &Binding) -> Value {
    unproject(&mut object, &binding.uid, true);
    object
}

/// Removes what projecting the binding with this uid wrote. `SERVICE_BINDING_ROOT` stays:
/// unprojecting never removes it. `mapping` also drops the workload's mapping annotation.
pub fn unproject(workload: &mut Value, uid: &str, mapping: bool) {
    let volume = format!("servicebinding-{uid}");
    let suffix = format!("-{uid}");
    let own_annotation =
        |k: &str| k.starts_with("projector.servicebinding.io/") && k.ends_with(&suffix);
    if mapping {
        if let Some(Value::Object(a)) = workload.pointer_mut("/metadata/annotations") {
            a.retain(|k, _| !own_annotation(k));
        }
    }
    let Some(template) = workload.pointer_mut("/spec/template") else {
        return;
    };
    let mut secrets = Vec::new();
    if let Some(Value::Object(a)) = template.pointer_mut("/metadata/annotations") {
        if let Some(Value::String(s)) = a.get(&format!("projector.servicebinding.io/secret-{uid}"))
        {
            secrets.push(s.clone());
        }
        a.retain(|k, _| !own_annotation(k));
    }
    let Some(spec) = template.get_mut("spec") else {
        return;
    };
    if let Some(Value::Array(volumes)) = spec.get_mut("volumes") {
        volumes.retain(|v| v["name"] != json!(volume));
        if volumes.is_empty() {
            spec.as_object_mut().map(|s| s.remove("volumes"));
        }
    }
    for key in ["initContainers", "containers"] {
        let Some(Value::Array(containers)) = spec.get_mut(key) else {
            continue;
        };
        for container in containers {
            if let Some(Value::Array(mounts)) = container.get_mut("volumeMounts") {
                mounts.retain(|m| m["name"] != json!(volume));
                if mounts.is_empty() {
                    container.as_object_mut().map(|c| c.remove("volumeMounts"));
                }
            }
            if let Some(Value::Array(env)) = container.get_mut("env") {
                env.retain(|e| {
                    let secret = e
                        .pointer("/valueFrom/secretKeyRef/name")
                        .and_then(Value::as_str);
                    let field = e
                        .pointer("/valueFrom/fieldRef/fieldPath")
                        .and_then(Value::as_str);
                    !secret.is_some_and(|s| secrets.iter().any(|x| x == s))
                        && !field.is_some_and(|f| {
                            f.contains("projector.servicebinding.io/") && f.contains(uid)
                        })
                });
            }
        }
    }
}

/// What the older VMware implementation (`internal.bindings.labs.vmware.com`) writes for a
/// binding whose projection is named by `digest` (40 lowercase hex digits): a projected
/// `binding-<digest>` volume of the binding secret, its mount under the container's root, the
/// root itself when missing, env mappings to the secret, and the secret's name recorded only on
/// the workload's own metadata.
pub fn project_vmware(workload: &mut Value, digest: &str, binding: &Binding) {
    let volume = format!("binding-{digest}");
    let recorded = object_at(workload, "metadata", "annotations");
    recorded.insert(
        format!("internal.bindings.labs.vmware.com/projection-{digest}"),
        json!(binding.secret),
    );
    let Some(spec) = workload.pointer_mut("/spec/template/spec") else {
        return;
    };
    list_at(spec, "volumes").push(json!({"name": volume,
        "projected": {"sources": [{"secret": {"name": binding.secret}}]}}));
    let Some(Value::Array(containers)) = spec.get_mut("containers") else {
        return;
    };
    for container in containers {
        let env = list_at(container, "env");
        if !env.iter().any(|e| e["name"] == "SERVICE_BINDING_ROOT") {
            env.push(json!({"name": "SERVICE_BINDING_ROOT", "value": ROOT}));
        }
        for (name, key) in &binding.env {
            env.push(json!({"name": name,
                "valueFrom": {"secretKeyRef": {"name": binding.secret, "key": key}}}));
        }
        list_at(container, "volumeMounts").push(json!({"name": volume, "readOnly": true,
            "mountPath": format!("{ROOT}/{}", binding.name)}));
    }
}

/// Projected entries go after all others, in name order; the others keep their order.
fn push_sorted(list: &mut Vec<Value>, entry: Value) {
    list.push(entry);
    let projected = |v: &Value| {
        v["name"]
            .as_str()
            .is_some_and(|n| n.starts_with("servicebinding-"))
    };
    let (mut ours, others): (Vec<Value>, Vec<Value>) = list.drain(..).partition(|v| projected(v));
    ours.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    list.extend(others);
    list.extend(ours);
}

fn object_at<'a>(value: &'a mut Value, a: &str, b: &str) -> &'a mut Map<String, Value> {
    let slot = &mut value[a][b];
    if !slot.is_object() {
        *slot = json!({});
    }
    slot.as_object_mut().expect("just made an object")
}

fn list_at<'a>(value: &'a mut Value, key: &str) -> &'a mut Vec<Value> {
    if !value[key].is_array() {
        value[key] = json!([]);
    }
    value[key].as_array_mut().expect("just made a list")
}
