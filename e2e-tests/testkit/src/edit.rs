//! Editing and comparing JSON documents by JSON pointer.

use std::collections::BTreeSet;

use serde_json::{json, Value};

/// `object` after `edit`.
pub fn with(mut object: Value, edit: impl FnOnce(&mut Value)) -> Value {
    edit(&mut object);
    object
}

/// The JSON pointer of a path of object keys (`~` and `/` escaped).
pub fn pointer(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
        .collect()
}

fn keys(pointer: &str) -> Vec<String> {
    pointer
        .split('/')
        .skip(1)
        .map(|k| k.replace("~1", "/").replace("~0", "~"))
        .collect()
}

/// Sets the value at a JSON pointer, creating missing objects on the way.
pub fn set(doc: &mut Value, pointer: &str, value: Value) {
    let keys = keys(pointer);
    let (last, parents) = keys.split_last().expect("non-empty pointer");
    let mut here = doc;
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

/// Removes the value at a JSON pointer (an object field), if it is there.
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
                let path = format!("{at}{}", pointer(&[k]));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_push_and_remove_follow_escaped_pointers() {
        let mut doc = json!({});
        let key = pointer(&["metadata", "annotations", "a.example/b~c"]);
        assert_eq!(key, "/metadata/annotations/a.example~1b~0c");
        set(&mut doc, &key, json!("now"));
        assert_eq!(doc["metadata"]["annotations"]["a.example/b~c"], "now");
        push(&mut doc, "/spec/list", json!(1));
        push(&mut doc, "/spec/list", json!(2));
        set(&mut doc, "/spec/list/0", json!(0));
        assert_eq!(doc["spec"]["list"], json!([0, 2]));
        remove(&mut doc, &key);
        assert_eq!(doc["metadata"]["annotations"], json!({}));
        assert_eq!(
            changed_paths(&doc, &with(doc.clone(), |d| d["spec"]["x"] = json!(1))),
            BTreeSet::from(["/spec/x".to_string()])
        );
    }
}
