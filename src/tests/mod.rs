//! Test helpers: fixtures modelled on Korifi v0.14 objects and on workloads the
//! servicebinding.io runtime binds, JSON edits and diffs, admission requests and what a response
//! is expected to be; and the table tests of `validate`.

mod kinds;
#[path = "../../e2e-tests/src/projector.rs"]
pub mod projector;
mod properties;
mod recognition;
mod release;
mod validate;

use std::collections::BTreeSet;

use kubewarden_policy_sdk::response::ValidationResponse;
use serde_json::{json, Value};

use crate::clock::UtcTime;
use crate::workload::{self, Workload};
use crate::{evaluate, WARNING_LIMIT};
use projector::Binding;

/// Wednesday 2026-12-02T16:51:06Z.
pub const NOW: UtcTime = UtcTime(1_796_230_266);
pub const EARLIER: &str = "2026-12-01T09:00:00Z";

/// A fixture from `e2e-tests/fixtures/`, e.g. `korifi-v0.14/statefulset-0-unbound.json`; a
/// bare name is one of the Korifi objects.
pub fn fixture(name: &str) -> Value {
    let name = if name.contains('/') {
        name.to_string()
    } else {
        format!("korifi-v0.14/{name}")
    };
    let path = format!("{}/e2e-tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn with(mut object: Value, edit: impl FnOnce(&mut Value)) -> Value {
    edit(&mut object);
    object
}

/// A workload as restage-gate leaves it when it holds `pending` since EARLIER, with the API
/// default control remembered.
pub fn held(object: Value, kind: &dyn Workload, pending: &str) -> Value {
    with(object, |o| {
        let hold = workload::default_hold(kind, EARLIER, pending);
        workload::hold(o, kind, &hold).expect("writable");
    })
}

pub fn template_of(sts: &Value) -> &Value {
    sts.pointer("/spec/template").expect("spec.template")
}

/// Sets the value at a JSON pointer, creating missing objects on the way.
pub fn set(doc: &mut Value, pointer: &str, value: Value) {
    let mut here = doc;
    let keys: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect();
    let (last, parents) = keys.split_last().expect("non-empty pointer");
    for key in parents {
        here = match here {
            Value::Array(list) => &mut list[key.parse::<usize>().expect("index")],
            other => {
                if other.get(key).is_none() {
                    other[key.as_str()] = json!({});
                }
                &mut other[key.as_str()]
            }
        };
    }
    match here {
        Value::Array(list) => list[last.parse::<usize>().expect("index")] = value,
        other => other[last.as_str()] = value,
    }
}

/// Appends to the list at a JSON pointer, creating it when missing.
pub fn push(doc: &mut Value, pointer: &str, value: Value) {
    if doc.pointer(pointer).is_none() {
        set(doc, pointer, json!([]));
    }
    doc.pointer_mut(pointer)
        .and_then(Value::as_array_mut)
        .expect("a list")
        .push(value);
}

/// Removes the value at a JSON pointer (an object field).
pub fn remove(doc: &mut Value, pointer: &str) {
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    let key = key.replace("~1", "/").replace("~0", "~");
    let target = if parent.is_empty() {
        Some(doc)
    } else {
        doc.pointer_mut(parent)
    };
    if let Some(Value::Object(map)) = target {
        map.remove(&key);
    }
}

/// JSON pointers of every leaf that differs between two documents.
pub fn changed_paths(a: &Value, b: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    diff(a, b, String::new(), &mut out);
    out
}

fn diff(a: &Value, b: &Value, at: String, out: &mut BTreeSet<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => diff(p, q, path, out),
                    _ => {
                        out.insert(path);
                    }
                }
            }
        }
        _ if a != b => {
            out.insert(at);
        }
        _ => {}
    }
}

pub fn unbound() -> Value {
    fixture("statefulset-0-unbound.json")
}

pub fn bound() -> Value {
    fixture("statefulset-1-bound-upsi.json")
}

pub fn upsi() -> Binding {
    Binding::from_service_binding(&fixture("servicebinding-user-provided.json")).expect("binding")
}

pub fn orders_db() -> Binding {
    Binding::from_service_binding(&fixture("servicebinding-managed-orders-db.json"))
        .expect("binding")
}

/// Korifi's statefulset-runner: its desired spec, labels and annotations (no projection, no
/// markers), with the API server's default strategy.
pub fn runner_write(current: &Value) -> Value {
    with(unbound(), |s| {
        for key in ["resourceVersion", "generation"] {
            s["metadata"][key] = current["metadata"][key].clone();
        }
    })
}

/// A rolling deploy: new `version` label and annotation, new droplet image.
pub fn rolling_deploy(sts: &mut Value) {
    for at in ["/metadata", "/spec/template/metadata"] {
        set(
            sts,
            &format!("{at}/labels/korifi.cloudfoundry.org~1version"),
            json!("1"),
        );
        set(
            sts,
            &format!("{at}/annotations/korifi.cloudfoundry.org~1version"),
            json!("1"),
        );
    }
    set(
        sts,
        "/spec/template/spec/containers/0/image",
        json!("registry.example.com/korifi/droplets@sha256:1111"),
    );
}

pub fn restarted(sts: &mut Value) {
    set(
        sts,
        "/spec/template/metadata/annotations/kubectl.kubernetes.io~1restartedAt",
        json!("2026-12-02T16:50:00Z"),
    );
}

/// What a first hold changes on a workload whose strategy was `RollingUpdate` with parameters;
/// a release of such a hold changes the same paths back.
pub const STRATEGY_HOLD_PATHS: [&str; 6] = [
    "/metadata/annotations/restage-gate.io~1held-since",
    "/metadata/annotations/restage-gate.io~1original-update-strategy",
    "/metadata/annotations/restage-gate.io~1pending",
    "/metadata/labels/restage-gate.io~1held",
    "/spec/updateStrategy/rollingUpdate",
    "/spec/updateStrategy/type",
];

/// `paths` and the removal of the release request, in order.
pub fn with_release_request(paths: &[&'static str]) -> Vec<&'static str> {
    let mut all = paths.to_vec();
    all.push("/metadata/annotations/restage-gate.io~1release");
    all.sort();
    all
}

pub struct Request {
    pub operation: &'static str,
    pub kind: &'static str,
    pub sub_resource: &'static str,
    pub old: Value,
    pub new: Value,
    pub settings: Value,
    pub now: UtcTime,
}

pub fn update(old: Value, new: Value) -> Request {
    let kind = ["StatefulSet", "DaemonSet", "Deployment"]
        .into_iter()
        .find(|k| [&new, &old].iter().any(|o| o["kind"] == *k))
        .unwrap_or("StatefulSet");
    Request {
        operation: "UPDATE",
        kind,
        sub_resource: "",
        old,
        new,
        settings: json!({}),
        now: NOW,
    }
}

impl Request {
    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = settings;
        self
    }

    pub fn payload(&self) -> Value {
        let meta = |key: &str| {
            [&self.new, &self.old]
                .iter()
                .find_map(|o| o["metadata"][key].as_str())
                .unwrap_or_default()
                .to_string()
        };
        json!({"settings": self.settings, "request": {
            "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
            "kind": {"group": "apps", "version": "v1", "kind": self.kind},
            "resource": {"group": "apps", "version": "v1", "resource": format!("{}s", self.kind.to_lowercase())},
            "subResource": self.sub_resource,
            "name": meta("name"),
            "namespace": meta("namespace"),
            "operation": self.operation,
            "userInfo": {"username": "system:serviceaccount:cf:korifi-controllers", "groups": ["system:serviceaccounts"]},
            "object": self.new,
            "oldObject": self.old,
            "dryRun": false,
        }})
    }

    pub fn run(&self) -> ValidationResponse {
        let bytes = serde_json::to_vec(&self.payload()).expect("serialisable");
        evaluate(&bytes, self.now)
    }
}

#[derive(Debug)]
pub enum Expect<'a> {
    /// Accepted unchanged, nothing said.
    Plain,
    /// Accepted with this mutation (exact changed paths) and `decision`.
    Mutated(&'static str, &'a [&'a str]),
    /// Accepted unchanged, with a warning and `decision`.
    Noted(&'static str),
    /// Refused.
    Rejected,
}

pub fn check(name: &str, request: &Request, expect: Expect<'_>) -> ValidationResponse {
    let r = request.run();
    let decision = r
        .audit_annotations
        .as_ref()
        .and_then(|a| a.get("decision"))
        .cloned();
    for w in r.warnings.iter().flatten() {
        assert!(
            w.chars().count() <= WARNING_LIMIT,
            "{name}: warning too long: {w}"
        );
    }
    match expect {
        Expect::Plain => {
            assert!(r.accepted, "{name}: accepted");
            assert!(r.mutated_object.is_none(), "{name}: not mutated");
            assert!(
                r.warnings.is_none() && r.audit_annotations.is_none(),
                "{name}: silent"
            );
        }
        Expect::Mutated(want, paths) => {
            assert!(r.accepted, "{name}: accepted");
            let mutated = r
                .mutated_object
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: mutated"));
            let changed: Vec<String> = changed_paths(&request.new, mutated).into_iter().collect();
            assert_eq!(changed, paths, "{name}: changed paths");
            assert_eq!(decision.as_deref(), Some(want), "{name}: decision");
            assert_eq!(
                r.warnings.as_ref().map(Vec::len),
                Some(1),
                "{name}: one warning"
            );
        }
        Expect::Noted(want) => {
            assert!(r.accepted, "{name}: accepted");
            assert!(r.mutated_object.is_none(), "{name}: not mutated");
            assert_eq!(decision.as_deref(), Some(want), "{name}: decision");
            assert_eq!(
                r.warnings.as_ref().map(Vec::len),
                Some(1),
                "{name}: one warning"
            );
        }
        Expect::Rejected => {
            assert!(!r.accepted, "{name}: rejected");
            assert_eq!(decision.as_deref(), Some("rejected"), "{name}: decision");
            assert!(r.message.is_some(), "{name}: message");
        }
    }
    r
}

pub fn annotation<'a>(sts: &'a Value, key: &str) -> Option<&'a str> {
    sts.pointer("/metadata/annotations")?.get(key)?.as_str()
}
