//! The two module lists that make a kind's file count, written by `make kinds` before anything
//! else: the policy's kinds table (`src/workload/kinds/mod.rs`, `KINDS`) and the test kit's
//! descriptors (`e2e-tests/testkit/src/kinds/mod.rs`, `DESCRIPTORS`), each listing the files
//! of its folder. Adding a kind adds its file to each folder; no list is edited by hand.
//!
//! This runs without the policy crate (it reads the folders as text), so it works while the
//! lists are stale, even when a listed file was removed. Each file is found by the one line
//! that implements the folder's trait for a type (`impl Workload for Widget {`). The list
//! keeps the order it has, which is the order of every generated list of kinds; a new file
//! goes last, and an edited order is kept.

use std::path::Path;

use crate::kinds::Generated;
use crate::repository;

/// A folder of kind files and the list written into its `mod.rs`.
pub struct Folder {
    pub dir: &'static str,
    /// The trait every file implements once, and its path from the list.
    pub implements: &'static str,
    pub trait_path: &'static str,
    /// The list's declaration up to its type, and what it is for.
    pub list: &'static str,
    pub visibility: &'static str,
    pub doc: &'static str,
    /// Whether the list re-exports each file's public items.
    pub reexport: bool,
    /// What the folder is for, the first line of its `mod.rs`.
    pub purpose: &'static str,
}

pub const FOLDERS: [Folder; 2] = [
    Folder {
        dir: "src/workload/kinds",
        implements: "Workload",
        trait_path: "super::Workload",
        list: "KINDS",
        visibility: "pub",
        doc:
            "/// Every kind the policy holds, in the order every generated list of kinds follows.\n\
              /// The kinds it does not hold, and why: docs/design.md §10.\n",
        reexport: true,
        purpose: "//! The kinds the policy holds, one file each, and the table of them.\n",
    },
    Folder {
        dir: "e2e-tests/testkit/src/kinds",
        implements: "Descriptor",
        trait_path: "crate::descriptor::Descriptor",
        list: "DESCRIPTORS",
        visibility: "pub(crate)",
        doc:
            "/// A descriptor per file here; `lookup::every` orders them as the policy's `KINDS`.\n",
        reexport: false,
        purpose: "//! The test kit's descriptors, one file per kind the policy holds.\n",
    },
];

const HEADER: &str = "//!\n\
                      //! Written by `make kinds` (restage-gate-release kind-modules) from the files in this folder:\n\
                      //! add or remove a kind's file and run it again. The list keeps its order; a new file goes\n\
                      //! last. It is laid out one kind a line, which rustfmt leaves as it is.\n";

/// One kind's file: its module name and the type that implements the folder's trait.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    module: String,
    type_name: String,
}

/// The type `text` implements `implements` for, on a line of its own: exactly one.
fn implementing_type(file: &str, text: &str, implements: &str) -> Result<String, String> {
    let prefix = format!("impl {implements} for ");
    let found: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix)?.strip_suffix(" {"))
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(format!(
            "{file}: no line `{prefix}TYPE {{`: a kind's file implements {implements} for its type"
        )),
        _ => Err(format!(
            "{file}: {} lines `{prefix}…`; a kind's file holds one kind",
            found.len()
        )),
    }
}

/// The modules the list in `mod.rs` names, in its order.
fn listed(now: &str, list: &str) -> Vec<String> {
    let Some(start) = now.find(&format!(" {list}: ")) else {
        return Vec::new();
    };
    let body = &now[start..];
    let body = body.split_once('=').map_or("", |(_, rest)| rest);
    let body = body.split_once('[').map_or("", |(_, rest)| rest);
    let body = body.split_once("];").map_or(body, |(items, _)| items);
    body.split(',')
        .filter_map(|item| item.trim().strip_prefix('&')?.split_once("::"))
        .map(|(module, _)| module.to_string())
        .collect()
}

/// The files of `dir` but `mod.rs`, in the order of the existing list, new ones last (by name).
fn entries(root: &Path, folder: &Folder, now: &str) -> Result<Vec<Entry>, String> {
    let path = root.join(folder.dir);
    let read = std::fs::read_dir(&path).map_err(|e| format!("{}: {e}", folder.dir))?;
    let mut modules = Vec::new();
    for entry in read {
        let name = entry
            .map_err(|e| format!("{}: {e}", folder.dir))?
            .file_name();
        let name = name.to_string_lossy();
        // An editor's lock or backup file is not a kind's file.
        if name.starts_with('.') {
            continue;
        }
        if let Some(module) = name.strip_suffix(".rs").filter(|m| *m != "mod") {
            if !is_module_name(module) {
                return Err(format!(
                    "{}/{name}: a kind's file is named as a Rust module: lower case, digits and _",
                    folder.dir
                ));
            }
            modules.push(module.to_string());
        }
    }
    modules.sort();
    let order = listed(now, folder.list);
    let rank = |m: &String| order.iter().position(|o| o == m).unwrap_or(usize::MAX);
    modules.sort_by_key(rank);
    modules
        .into_iter()
        .map(|module| {
            let file = format!("{}/{module}.rs", folder.dir);
            let text = repository::read(root, &file)?;
            let type_name = implementing_type(&file, &text, folder.implements)?;
            Ok(Entry { module, type_name })
        })
        .collect()
}

/// A name `mod NAME;` takes as it is.
fn is_module_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The list, one item a line: the order is the list's point, and `#[rustfmt::skip]` keeps
/// rustfmt from laying it out otherwise.
fn list_literal(declaration: &str, items: &[String]) -> String {
    let mut out = format!("#[rustfmt::skip]\n{declaration}[\n");
    for item in items {
        out.push_str(&format!("    {item},\n"));
    }
    out.push_str("];\n");
    out
}

fn render(folder: &Folder, entries: &[Entry]) -> String {
    let mut sorted: Vec<&Entry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.module.cmp(&b.module));
    let mut out = format!("{}{HEADER}\n", folder.purpose);
    for e in &sorted {
        out.push_str(&format!("mod {};\n", e.module));
    }
    out.push('\n');
    if folder.reexport {
        for e in &sorted {
            out.push_str(&format!("pub use {}::*;\n", e.module));
        }
        out.push('\n');
    }
    out.push_str(&format!("use {};\n\n", folder.trait_path));
    out.push_str(folder.doc);
    let declaration = format!(
        "{} const {}: [&dyn {}; {}] = ",
        folder.visibility,
        folder.list,
        folder.implements,
        entries.len()
    );
    let items: Vec<String> = entries
        .iter()
        .map(|e| format!("&{}::{}", e.module, e.type_name))
        .collect();
    out.push_str(&list_literal(&declaration, &items));
    out
}

/// Each folder's `mod.rs`, as it is and as its files make it.
pub fn generate(root: &Path) -> Result<Vec<Generated>, String> {
    FOLDERS
        .iter()
        .map(|folder| {
            let file = format!("{}/mod.rs", folder.dir);
            let now = repository::read(root, &file).ok();
            let entries = entries(root, folder, now.as_deref().unwrap_or_default())?;
            if entries.is_empty() {
                return Err(format!("{}: no kind's file", folder.dir));
            }
            Ok(Generated {
                file,
                now,
                wanted: Some(render(folder, &entries)),
            })
        })
        .collect()
}

/// Writes each stale list; returns the files written.
pub fn write(root: &Path) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    for f in generate(root)? {
        if let (Some(wanted), true) = (&f.wanted, f.now != f.wanted) {
            std::fs::write(root.join(&f.file), wanted).map_err(|e| format!("{}: {e}", f.file))?;
            written.push(f.file);
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_implementing_type_is_found_on_its_own_line_only() {
        let text =
            "/// impl Workload for Comment {\npub struct Widget;\nimpl Workload for Widget {\n";
        assert_eq!(
            implementing_type("f.rs", text, "Workload"),
            Ok("Widget".to_string())
        );
        assert!(implementing_type(
            "f.rs",
            "impl Workload for A {\nimpl Workload for B {\n",
            "Workload"
        )
        .is_err());
        assert!(implementing_type("f.rs", "impl Descriptor for A {\n", "Workload").is_err());
        assert!(implementing_type("f.rs", "impl Workload for Vec<A> {\n", "Workload").is_err());
    }

    #[test]
    fn a_list_keeps_its_order_and_takes_a_new_module_last() {
        let now = "pub const KINDS: [&dyn Workload; 2] = [&statefulset::StatefulSet, &daemonset::DaemonSet];\n";
        assert_eq!(listed(now, "KINDS"), ["statefulset", "daemonset"]);
        let vertical = "pub const KINDS: [&dyn Workload; 2] = [\n    &b::B,\n    &a::A,\n];\n";
        assert_eq!(listed(vertical, "KINDS"), ["b", "a"]);
        let wrapped = "pub const KINDS: [&dyn Workload; 2] =\n    [&b::B, &a::A];\n";
        assert_eq!(listed(wrapped, "KINDS"), ["b", "a"]);
        assert!(listed("", "KINDS").is_empty());
    }

    #[test]
    fn a_list_is_written_one_kind_a_line_whatever_its_length() {
        for n in [1, 2, 9] {
            let items: Vec<String> = (0..n).map(|i| format!("&m{i}::T{i}")).collect();
            let list = list_literal("pub const K: [&dyn W; 1] = ", &items);
            assert!(list.starts_with("#[rustfmt::skip]\n"), "{list}");
            assert_eq!(list.lines().count(), n + 3, "{list}");
            let order: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
            assert_eq!(listed(&list, "K"), order);
        }
    }

    #[test]
    fn only_rust_module_names_are_kinds_files() {
        assert!(is_module_name("cloneset") && is_module_name("v2_widget"));
        for bad in ["my-kind", "Widget", "2widget", ""] {
            assert!(!is_module_name(bad), "{bad}");
        }
    }

    /// The lists on disk are what the folders make (`make kinds` writes them).
    #[test]
    fn the_module_lists_are_the_folders_files() {
        for f in generate(&repository::root()).expect("generated") {
            assert_eq!(f.now, f.wanted, "{} is stale: run `make kinds`", f.file);
        }
    }
}
