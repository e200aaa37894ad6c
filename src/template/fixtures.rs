//! The Korifi objects the template's unit tests start from (`e2e-tests/fixtures/korifi-v0.14/`),
//! read as files: the policy crate's own tests need no test kit.

use serde_json::Value;

/// A file under `e2e-tests/`; the fixtures ship with the repository, so a missing one is a
/// broken checkout and worth a loud failure.
pub fn read(path: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("e2e-tests")
        .join(path);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One of the Korifi objects, by its file name.
pub fn fixture(name: &str) -> Value {
    read(&format!("fixtures/korifi-v0.14/{name}"))
}

pub fn template_of(object: &Value) -> &Value {
    object.pointer("/spec/template").expect("spec.template")
}

/// `value` at a JSON pointer whose parent object or list is there.
pub fn set(doc: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
    let key = key.replace("~1", "/").replace("~0", "~");
    match doc.pointer_mut(parent).expect("the parent") {
        Value::Array(list) => list[key.parse::<usize>().expect("an index")] = value,
        other => other[key.as_str()] = value,
    }
}
