//! The project's own files, as the tools and tests read them.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The top of the repository.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
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

/// The markers around a generated block of a document: `<!-- NAME:begin -->` on a line of its
/// own, and `<!-- NAME:end -->`.
fn markers(name: &str) -> (String, String) {
    (
        format!("<!-- {name}:begin -->\n"),
        format!("<!-- {name}:end -->"),
    )
}

/// The text of `file` and where its block `name` is in it.
fn locate(root: &Path, file: &str, name: &str) -> Result<(String, std::ops::Range<usize>), String> {
    let text = read(root, file)?;
    let (begin, end) = markers(name);
    let start = text
        .find(&begin)
        .ok_or_else(|| format!("{file}: no {} marker", begin.trim_end()))?
        + begin.len();
    let stop = text[start..]
        .find(&end)
        .ok_or_else(|| format!("{file}: no {end} marker after {}", begin.trim_end()))?
        + start;
    Ok((text, start..stop))
}

/// The generated block `name` of `file`: what a tool wrote between its markers.
pub fn generated(root: &Path, file: &str, name: &str) -> Result<String, String> {
    let (text, at) = locate(root, file, name)?;
    Ok(text[at].to_string())
}

/// Replaces the generated block `name` of `file` with `block`.
pub fn write_generated(root: &Path, file: &str, name: &str, block: &str) -> Result<(), String> {
    let (text, at) = locate(root, file, name)?;
    let updated = format!("{}{block}{}", &text[..at.start], &text[at.end..]);
    std::fs::write(root.join(file), updated).map_err(|e| format!("{file}: {e}"))
}

/// Whether this run rewrites what it checks (`BLESS` set in the environment).
pub fn bless() -> bool {
    std::env::var_os("BLESS").is_some()
}

/// Checks that the generated block `name` of `file` is `block`; when blessing (see [`bless`]),
/// writes it instead. The error says how to regenerate it.
pub fn check_generated(
    root: &Path,
    file: &str,
    name: &str,
    block: &str,
    bless: bool,
) -> Result<(), String> {
    if bless {
        return write_generated(root, file, name, block);
    }
    if generated(root, file, name)? == block {
        return Ok(());
    }
    Err(format!(
        "{file}'s `{name}` block differs from this run:\n{block}\nrun `BLESS=1 make test` to update it"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_block_is_read_written_and_checked_between_its_markers() {
        let dir =
            std::env::temp_dir().join(format!("restage-gate-generated-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let doc = "intro\n<!-- t:begin -->\nold\n<!-- t:end -->\nrest\n";
        std::fs::write(dir.join("doc.md"), doc).expect("write");
        assert_eq!(generated(&dir, "doc.md", "t"), Ok("old\n".into()));
        assert!(check_generated(&dir, "doc.md", "t", "new\n", false).is_err());
        write_generated(&dir, "doc.md", "t", "new\n").expect("written");
        let text = read(&dir, "doc.md").expect("read");
        assert_eq!(text, doc.replace("old", "new"));
        assert_eq!(check_generated(&dir, "doc.md", "t", "new\n", false), Ok(()));
        check_generated(&dir, "doc.md", "t", "newer\n", true).expect("blessed");
        assert_eq!(generated(&dir, "doc.md", "t"), Ok("newer\n".into()));
        assert_eq!(
            generated(&dir, "doc.md", "other"),
            Err("doc.md: no <!-- other:begin --> marker".into())
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
