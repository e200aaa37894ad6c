//! A kind is one unit: what differs between kinds is answered by the kind, in its file of
//! `src/workload/kinds/` and its test-kit descriptor (`e2e-tests/testkit/src/kinds/`). Code elsewhere
//! that names a kind or an API group as a string (`"Deployment"`, `"apps"`, `"apps/v1"`) decides
//! by kind behind the kind's back, and a kind added later would be missed there. This check reads
//! every `.rs` file of the workspace as Rust tokens and refuses such a string literal outside
//! those files. Fixtures (JSON) and docs are not code; comments are not read.

#![cfg(test)]

use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};

use crate::repository;

/// Where a kind may be named: its own files.
const KIND_FILES: &[&str] = &["src/workload/kinds/", "e2e-tests/testkit/src/kinds/"];
/// Directories that hold no code of the workspace.
const NOT_CODE: &[&str] = &["target", ".git", "artifacts", "corpus"];
/// This check, which names the kinds it looks for.
const THIS_FILE: &str = "tools/release/src/kind_names.rs";

/// The names no code outside a kind's files may write as a string: every kind's `kind`, API
/// group and `apiVersion`, as `KINDS` declares them (a kind added there is
/// looked for from then on).
fn forbidden() -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for kind in restage_gate::workload::kinds().map(|w| w.declared()) {
        names.extend([kind.kind, kind.group].map(String::from));
        names.push(format!("{}/{}", kind.group, kind.version));
    }
    names.retain(|n| !n.is_empty());
    names.sort();
    names.dedup();
    names
}

/// Whether the string `value` names a kind or group of `names`: the name itself, or an
/// `apiVersion` of the group (`apps/v1`).
fn names_a_kind(value: &str, names: &[String]) -> bool {
    names.iter().any(|n| {
        value == n
            || value
                .strip_prefix(n.as_str())
                .is_some_and(|v| v.starts_with('/') && !n.contains('/'))
    })
}

/// Every string literal of Rust source, macro arguments included (`json!`, `format!`); doc
/// comments are attributes and are skipped.
fn string_literals(source: &str) -> Result<Vec<String>, String> {
    let tokens: TokenStream = source.parse().map_err(|e| format!("not Rust: {e}"))?;
    let mut out = Vec::new();
    collect(tokens, &mut out);
    Ok(out)
}

fn collect(tokens: TokenStream, out: &mut Vec<String>) {
    for token in tokens {
        match token {
            // `#[doc = "…"]`: a doc comment, not code.
            TokenTree::Group(group) if is_doc_attribute(&group) => {}
            TokenTree::Group(group) => collect(group.stream(), out),
            TokenTree::Literal(literal) => {
                if let syn::Lit::Str(text) = syn::Lit::new(literal) {
                    out.push(text.value());
                }
            }
            _ => {}
        }
    }
}

/// The bracketed part of a doc attribute: `[doc = "…"]`.
fn is_doc_attribute(group: &proc_macro2::Group) -> bool {
    group.delimiter() == proc_macro2::Delimiter::Bracket
        && matches!(group.stream().into_iter().next(), Some(TokenTree::Ident(ident)) if ident == "doc")
}

/// The `.rs` files under `dir`, relative to `root`, outside the directories that hold no code.
fn rust_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for path in entries.filter_map(|e| Some(e.ok()?.path())) {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            if !NOT_CODE.contains(&name) {
                rust_files(root, &path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path.strip_prefix(root).unwrap_or(&path).to_path_buf());
        }
    }
}

/// Where code outside a kind's own files names a kind: `file: "literal"` for each.
fn kind_names_outside_kind_files(root: &Path) -> Vec<String> {
    let names = forbidden();
    let mut files = Vec::new();
    rust_files(root, root, &mut files);
    files.sort();
    let mut found = Vec::new();
    for file in files {
        let relative = file.to_string_lossy().replace('\\', "/");
        if relative == THIS_FILE || KIND_FILES.iter().any(|k| relative.starts_with(k)) {
            continue;
        }
        let source = repository::read(root, &relative).unwrap_or_else(|e| panic!("{e}"));
        let literals = string_literals(&source).unwrap_or_else(|e| panic!("{relative}: {e}"));
        for literal in literals.into_iter().filter(|l| names_a_kind(l, &names)) {
            found.push(format!("{relative}: {literal:?}"));
        }
    }
    found
}

#[test]
fn no_code_outside_a_kinds_files_names_a_kind_or_an_api_group() {
    let found = kind_names_outside_kind_files(&repository::root());
    assert!(
        found.is_empty(),
        "code names a kind or an API group as a string outside src/workload/kinds/ and \
         e2e-tests/testkit/src/kinds/; ask the kind (restage_gate::workload) or its test-kit \
         descriptor (restage_gate_testkit::descriptor) instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_finds_a_kind_named_in_code_and_in_macros_but_not_in_comments() {
    let names = forbidden();
    let source = r##"
        /// A Deployment, in prose: "Deployment".
        fn f(kind: &str) -> bool {
            // "StatefulSet" in a comment
            let _ = json!({"apiVersion": "apps/v1", "kind": "DaemonSet"});
            kind == "StatefulSet" || format!("{kind}") == "a paused Deployment"
        }
        fn g(doc: &str) -> bool {
            doc == "Deployment"
        }
    "##;
    let found: Vec<String> = string_literals(source)
        .expect("Rust")
        .into_iter()
        .filter(|l| names_a_kind(l, &names))
        .collect();
    assert_eq!(found, ["apps/v1", "DaemonSet", "StatefulSet", "Deployment"]);
    for name in ["StatefulSet", "Deployment", "apps"] {
        assert!(names.iter().any(|n| n == name), "{name} is looked for");
    }
    assert!(!names_a_kind("application", &names) && !names_a_kind("apps-v1", &names));
}
