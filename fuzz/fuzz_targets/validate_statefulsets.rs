//! `validate` on structurally valid ValidationRequests whose objects are generated
//! StatefulSets, DaemonSets and Deployments: containers, init containers, volumes, env, annotations, binding artefacts,
//! and garbage of every JSON type in any field. Never a panic, never an error; a mutation only
//! touches the rollout control (`updateStrategy`, `paused`) and the policy's markers.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use restage_gate::markers::HELD_LABEL;
use restage_gate::workload::{kinds, marker_annotations};
use serde_json::{json, Map, Value};

/// Every key the policy may write: its label and its annotations, those of every kind.
fn marker_keys() -> Vec<&'static str> {
    let mut keys = marker_annotations();
    keys.push(HELD_LABEL);
    keys
}

#[derive(Arbitrary, Debug)]
enum Json {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(Word),
    List(Vec<Word>),
    Object(Vec<(Word, Word)>),
}

/// Strings drawn towards what the policy looks at.
#[derive(Arbitrary, Debug)]
enum Word {
    Binding(u8),
    Legacy,
    Root,
    Projector(u8),
    Marker(u8),
    OnDelete,
    RollingUpdate,
    True,
    Free(String),
}

impl Word {
    fn text(&self) -> String {
        match self {
            Word::Binding(i) => format!("servicebinding-{}", uid(*i)),
            Word::Legacy => "binding-0123456789abcdef0123456789abcdef01234567".into(),
            Word::Root => "SERVICE_BINDING_ROOT".into(),
            Word::Projector(i) => format!("projector.servicebinding.io/secret-{}", uid(*i)),
            Word::Marker(i) => {
                let keys = marker_keys();
                keys[usize::from(*i) % keys.len()].into()
            }
            Word::OnDelete => "OnDelete".into(),
            Word::RollingUpdate => "RollingUpdate".into(),
            Word::True => "true".into(),
            Word::Free(s) => s.clone(),
        }
    }
}

/// A ServiceBinding uid, as the projector names its artefacts after it.
fn uid(i: u8) -> String {
    format!("{i:02x}000000-1d4a-4e8b-9c6f-0a1b2c3d4e5f")
}

impl Json {
    fn value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => json!(b),
            Json::Int(i) => json!(i),
            Json::Float(f) => json!(f),
            Json::Text(w) => json!(w.text()),
            Json::List(l) => Value::Array(l.iter().map(|w| json!(w.text())).collect()),
            Json::Object(o) => Value::Object(
                o.iter()
                    .map(|(k, v)| (k.text(), json!(v.text())))
                    .collect::<Map<_, _>>(),
            ),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Container {
    name: Word,
    env: Vec<(Word, Option<Word>, Option<Word>)>,
    mounts: Vec<(Word, Word)>,
}

#[derive(Arbitrary, Debug)]
struct Sts {
    containers: Vec<Container>,
    init_containers: Vec<Container>,
    volumes: Vec<(Word, Option<Word>)>,
    annotations: Vec<(Word, Word)>,
    labels: Vec<(Word, Word)>,
    strategy: Option<Json>,
    status: Option<(Json, Json, Json)>,
    /// Garbage: replaces the field at one of a few paths with any JSON.
    garbage: Vec<(u8, Json)>,
}

const GARBAGE_PATHS: [&str; 13] = [
    "/metadata",
    "/metadata/labels",
    "/metadata/annotations",
    "/spec",
    "/spec/template",
    "/spec/template/metadata",
    "/spec/template/spec",
    "/spec/template/spec/containers",
    "/spec/template/spec/volumes",
    "/spec/replicas",
    "/status",
    "/spec/updateStrategy",
    "/spec/paused",
];

fn container(c: &Container) -> Value {
    let env: Vec<Value> = c.env.iter().map(|(n, secret, field)| {
        let mut e = json!({"name": n.text()});
        if let Some(s) = secret {
            e["valueFrom"] = json!({"secretKeyRef": {"name": s.text(), "key": "k"}});
        } else if let Some(f) = field {
            e["valueFrom"] = json!({"fieldRef": {"fieldPath": format!("metadata.annotations['{}']", f.text())}});
        } else {
            e["value"] = json!("/bindings");
        }
        e
    }).collect();
    let mounts: Vec<Value> = c
        .mounts
        .iter()
        .map(|(n, p)| json!({"name": n.text(), "mountPath": format!("/bindings/{}", p.text())}))
        .collect();
    json!({"name": c.name.text(), "image": "app:1", "env": env, "volumeMounts": mounts})
}

/// The kind's control, where it declares it.
fn set_control(doc: &mut Value, kind: &str, value: Value) {
    let workload = kinds().find(|w| w.kind() == kind).expect("a kind held");
    set(
        doc,
        &format!("/{}", workload.control_path().join("/")),
        value,
    );
}

fn set(doc: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    if let Some(Value::Object(map)) = doc.pointer_mut(parent) {
        map.insert(key.to_string(), value);
    }
}

impl Sts {
    /// Whether the kind's control is a boolean (a Deployment's `paused`), not a strategy.
    fn control_is_boolean(&self, kind: &str) -> bool {
        kinds()
            .find(|w| w.kind() == kind)
            .is_some_and(|w| w.default_control().is_boolean())
    }

    fn value(&self, kind: &str) -> Value {
        let map = |pairs: &[(Word, Word)]| {
            Value::Object(
                pairs
                    .iter()
                    .map(|(k, v)| (k.text(), json!(v.text())))
                    .collect(),
            )
        };
        let volumes: Vec<Value> = self.volumes.iter().map(|(n, secret)| match secret {
            Some(s) => json!({"name": n.text(), "projected": {"sources": [{"secret": {"name": s.text()}}]}}),
            None => json!({"name": n.text(), "emptyDir": {}}),
        }).collect();
        let declared = kinds().find(|w| w.kind() == kind).map(|w| w.declared());
        let api_version = declared.map(|d| format!("{}/{}", d.group, d.version));
        let mut sts = json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": {"name": "app", "namespace": "ns", "generation": 2, "labels": map(&self.labels), "annotations": map(&self.annotations)},
            "spec": {"replicas": 3, "template": {
                "metadata": {"annotations": map(&self.annotations)},
                "spec": {"containers": self.containers.iter().map(container).collect::<Vec<_>>(),
                         "initContainers": self.init_containers.iter().map(container).collect::<Vec<_>>(),
                         "volumes": volumes}}},
        });
        match &self.strategy {
            Some(p) if self.control_is_boolean(kind) => set_control(&mut sts, kind, p.value()),
            Some(s) => set_control(&mut sts, kind, json!({"type": s.value()})),
            None => {}
        }
        if let Some((a, b, c)) = &self.status {
            sts["status"] = json!({"observedGeneration": a.value(), "currentRevision": b.value(), "updatedReplicas": c.value()});
        }
        for (at, value) in &self.garbage {
            set(
                &mut sts,
                GARBAGE_PATHS[usize::from(*at) % GARBAGE_PATHS.len()],
                value.value(),
            );
        }
        sts
    }
}

#[derive(Arbitrary, Debug)]
struct Input {
    old: Sts,
    new: Sts,
    /// The new object is the old one with only these edits (binding-shaped changes).
    derived: bool,
    operation: u8,
    kind: u8,
    subresource: bool,
    reject: bool,
}

fuzz_target!(|input: Input| {
    let held: Vec<_> = kinds().collect();
    let workload = held[usize::from(input.kind) % held.len()];
    let kind = workload.kind();
    let old = input.old.value(kind);
    let new = if input.derived {
        let mut n = old.clone();
        let extra = input.new.value(kind);
        for at in ["/spec/template/spec/volumes", "/spec/template/metadata"] {
            set(
                &mut n,
                at,
                extra.pointer(at).cloned().unwrap_or(Value::Null),
            );
        }
        n
    } else {
        input.new.value(kind)
    };
    let operation = ["UPDATE", "CREATE", "DELETE", "CONNECT"][usize::from(input.operation) % 4];
    let payload = json!({"settings": {"mode": if input.reject { "reject" } else { "defer" }},
        "request": {"uid": "u", "operation": operation, "subResource": if input.subresource { "status" } else { "" },
            "kind": {"group": workload.declared().group, "version": workload.declared().version, "kind": kind},
            "name": "app", "namespace": "ns", "object": new, "oldObject": old}});
    let bytes = serde_json::to_vec(&payload).expect("serialisable");
    let out = restage_gate::validate(&bytes).expect("validate never returns Err");
    let response: Value = serde_json::from_slice(&out).expect("a JSON response");
    assert!(response["accepted"].is_boolean());
    if let Some(mutated) = response.get("mutated_object").filter(|m| !m.is_null()) {
        assert_eq!(
            mutated.get("spec").and_then(|s| s.get("template")),
            new.get("spec").and_then(|s| s.get("template")),
            "the template is never touched"
        );
        let strip = |v: &Value| {
            let mut v = v.clone();
            let control = workload.control_path().join("/");
            if let Some(Value::Object(parent)) = v.pointer_mut(&format!(
                "/{}",
                control.rsplit_once('/').map_or("", |(p, _)| p)
            )) {
                parent.remove(control.rsplit('/').next().unwrap_or_default());
            }
            // a null or emptied label/annotation map is the same as none
            for key in ["labels", "annotations"] {
                let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) else {
                    continue;
                };
                if let Some(Value::Object(m)) = meta.get_mut(key) {
                    m.retain(|k, _| !marker_keys().contains(&k.as_str()));
                }
                if meta
                    .get(key)
                    .is_some_and(|m| m.is_null() || m.as_object().is_some_and(Map::is_empty))
                {
                    meta.remove(key);
                }
            }
            v
        };
        assert_eq!(
            strip(mutated),
            strip(&new),
            "only the rollout control and the markers change"
        );
    }
});
