//! Test helpers: fixtures modelled on Korifi v0.14 objects, JSON edits and JSON diffs; and
//! the table tests of `validate`.

#[path = "../../e2e-tests/src/projector.rs"]
pub mod projector;
mod properties;
mod validate;

use std::collections::BTreeSet;

use serde_json::{json, Value};

/// A fixture from `e2e-tests/fixtures/korifi-v0.14/`.
pub fn fixture(name: &str) -> Value {
    let path = format!(
        "{}/e2e-tests/fixtures/korifi-v0.14/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
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
