//! The project's own files, as the tools and tests read them.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The top of the repository.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A file under `root`, named in the error by its path in the repository.
pub fn read(root: &Path, name: &str) -> Result<String, String> {
    std::fs::read_to_string(root.join(name)).map_err(|e| format!("{name}: {e}"))
}

/// One YAML document as JSON, the error naming the file.
pub fn yaml(name: &str, text: &str) -> Result<Value, String> {
    serde_yaml::from_str(text).map_err(|e| format!("{name}: not YAML: {e}"))
}

/// Every document of a multi-document YAML file.
pub fn yaml_documents(name: &str, text: &str) -> Result<Vec<Value>, String> {
    use serde::Deserialize;
    serde_yaml::Deserializer::from_str(text)
        .map(|doc| Value::deserialize(doc).map_err(|e| format!("{name}: not YAML: {e}")))
        .collect()
}
