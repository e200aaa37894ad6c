//! The GitHub workflows (`.github/workflows/*.yml`) call the project through make. Each must
//! parse as a workflow, and every `make TARGET` in its steps must be a target the Makefile
//! defines and the README documents, so that renaming a target cannot silently break CI or
//! the release.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::repository;

pub const DIR: &str = ".github/workflows";

/// Everything wrong with the workflows under `root`, as "file: what is wrong".
pub fn problems(root: &Path) -> Vec<String> {
    let files = match workflow_files(root) {
        Ok(files) if files.is_empty() => return vec![format!("{DIR}: no workflows")],
        Ok(files) => files,
        Err(e) => return vec![e],
    };
    let (makefile, readme) = match (
        repository::read(root, "Makefile"),
        repository::read(root, "README.md"),
    ) {
        (Ok(m), Ok(r)) => (m, r),
        (m, r) => return m.err().into_iter().chain(r.err()).collect(),
    };
    let targets = makefile_targets(&makefile);
    let mut out = Vec::new();
    for name in files {
        let checked = repository::read(root, &name)
            .and_then(|text| runs(&name, &text))
            .map(|scripts| check_calls(&name, &scripts, &targets, &readme));
        match checked {
            Ok(found) => out.extend(found),
            Err(e) => out.push(e),
        }
    }
    out
}

fn workflow_files(root: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(root.join(DIR)).map_err(|e| format!("{DIR}: {e}"))?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yml") || n.ends_with(".yaml"))
        .map(|n| format!("{DIR}/{n}"))
        .collect();
    names.sort();
    Ok(names)
}

fn check_calls(
    name: &str,
    scripts: &[String],
    targets: &BTreeSet<String>,
    readme: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for target in scripts.iter().flat_map(|s| make_targets(s)) {
        if !targets.contains(&target) {
            out.push(format!(
                "{name}: `make {target}` is not a target of the Makefile; call one it defines"
            ));
        } else if !documents(readme, &format!("make {target}")) {
            out.push(format!(
                "{name}: `make {target}` is not documented in README.md; document it there or call a documented target"
            ));
        }
    }
    out
}

/// The `run` scripts of a workflow's steps, after checking that it is a workflow: a `name`,
/// triggers under `on`, and jobs that each run steps or call a reusable workflow.
pub fn runs(name: &str, text: &str) -> Result<Vec<String>, String> {
    let doc = repository::yaml(name, text)?;
    if doc["name"].as_str().is_none() {
        return Err(format!("{name}: no `name`"));
    }
    if doc.get("on").is_none_or(Value::is_null) {
        return Err(format!("{name}: no triggers under `on`"));
    }
    let jobs = doc["jobs"]
        .as_object()
        .filter(|j| !j.is_empty())
        .ok_or_else(|| format!("{name}: `jobs` must be a non-empty map"))?;
    let mut scripts = Vec::new();
    for (id, job) in jobs {
        if job["uses"].is_string() {
            continue;
        }
        let steps = job["steps"]
            .as_array()
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("{name}: job {id} has neither `steps` nor `uses`"))?;
        if job["runs-on"].as_str().is_none() {
            return Err(format!("{name}: job {id} has no `runs-on`"));
        }
        for (i, step) in steps.iter().enumerate() {
            match (step["run"].as_str(), step["uses"].as_str()) {
                (Some(run), None) => scripts.push(run.to_string()),
                (None, Some(_)) => {}
                _ => {
                    return Err(format!(
                        "{name}: job {id} step {i} must have exactly one of `run` and `uses`"
                    ))
                }
            }
        }
    }
    Ok(scripts)
}

/// The targets of every `make` command in a shell script: its arguments up to the end of the
/// command, less options and variable assignments.
pub fn make_targets(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let script = script.replace("\\\n", " ");
    for command in script.split(['\n', ';', '|', '&', '(', ')', '`']) {
        let mut words = command.split_whitespace();
        if words.next() != Some("make") {
            continue;
        }
        out.extend(
            words
                .take_while(|w| !w.starts_with(['>', '<', '#']))
                .filter(|w| !w.starts_with('-') && !w.contains('='))
                .map(str::to_string),
        );
    }
    out
}

/// The explicit targets of a Makefile: the names before the `:` of its rules, leaving out
/// variable assignments, special targets (`.PHONY`) and patterns.
pub fn makefile_targets(makefile: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in makefile.lines() {
        if line.starts_with([' ', '\t', '#']) {
            continue;
        }
        let Some((names, rest)) = line.split_once(':') else {
            continue;
        };
        if rest.starts_with('=') || names.contains('=') || names.starts_with("export ") {
            continue;
        }
        out.extend(
            names
                .split_whitespace()
                .filter(|n| !n.starts_with('.') && !n.contains(['$', '%']))
                .map(str::to_string),
        );
    }
    out
}

/// Whether `text` mentions `command` as a whole command (`make test`, not `make tests`).
fn documents(text: &str, command: &str) -> bool {
    let target_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    text.match_indices(command).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + command.len()..].chars().next();
        !before.is_some_and(target_char) && !after.is_some_and(target_char)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metadata;
    use crate::repository::root;

    #[test]
    fn the_workflows_call_targets_the_makefile_defines_and_the_readme_documents() {
        let found = problems(&root());
        assert!(found.is_empty(), "{}", found.join("\n"));
    }

    #[test]
    fn the_workflows_run_the_tests_and_push_the_release_through_make() {
        let calls = |name: &str| -> Vec<String> {
            let text = repository::read(&root(), name).expect("workflow");
            runs(name, &text)
                .expect("workflow")
                .iter()
                .flat_map(|s| make_targets(s))
                .collect()
        };
        assert!(calls(".github/workflows/test.yml").contains(&"test".to_string()));
        let release = calls(".github/workflows/release.yml");
        for target in ["annotated-policy.wasm", "push"] {
            assert!(release.contains(&target.to_string()), "{release:?}");
        }
    }

    #[test]
    fn the_release_pushes_where_the_metadata_says_the_policy_is() {
        let name = ".github/workflows/release.yml";
        let release = repository::read(&root(), name).and_then(|t| repository::yaml(name, &t));
        let release = release.expect("release workflow");
        let registry = release["jobs"]["release"]["env"]["REGISTRY"]
            .as_str()
            .expect("the release job's REGISTRY");
        let meta = repository::read(&root(), "metadata.yml").and_then(|t| metadata::read_yaml(&t));
        assert_eq!(
            format!("{registry}/restage-gate"),
            meta.expect("metadata.yml")["annotations"]["io.kubewarden.policy.ociUrl"]
        );
    }

    /// A copy of the project with one file edited, checked.
    fn problems_after(name: &str, edit: impl Fn(&str) -> String) -> Vec<String> {
        let dir = std::env::temp_dir().join(format!(
            "restage-gate-workflows-{}-{}",
            std::process::id(),
            name.replace('/', "-")
        ));
        std::fs::create_dir_all(dir.join(DIR)).expect("temp dir");
        for file in workflow_files(&root()).expect("workflows") {
            std::fs::copy(root().join(&file), dir.join(&file)).expect("copy");
        }
        for file in ["Makefile", "README.md"] {
            std::fs::copy(root().join(file), dir.join(file)).expect("copy");
        }
        let text = std::fs::read_to_string(dir.join(name)).expect("file");
        std::fs::write(dir.join(name), edit(&text)).expect("write");
        let found = problems(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        found
    }

    #[test]
    fn a_target_renamed_in_the_makefile_fails_the_check() {
        let found = problems_after("Makefile", |m| m.replace("\ntest: ", "\ncheck: "));
        assert_eq!(
            found,
            [".github/workflows/test.yml: `make test` is not a target of the Makefile; call one it defines"]
        );
    }

    #[test]
    fn a_target_renamed_in_a_workflow_fails_the_check() {
        let found = problems_after(".github/workflows/release.yml", |w| {
            w.replace("make push ", "make publish ")
        });
        assert_eq!(
            found,
            [".github/workflows/release.yml: `make publish` is not a target of the Makefile; call one it defines"]
        );
    }

    #[test]
    fn a_target_the_readme_does_not_document_fails_the_check() {
        let found = problems_after("README.md", |r| r.replace("make push", "make upload"));
        assert_eq!(
            found,
            [".github/workflows/release.yml: `make push` is not documented in README.md; document it there or call a documented target"]
        );
    }

    #[test]
    fn a_workflow_that_does_not_parse_fails_the_check() {
        let found = problems_after(".github/workflows/test.yml", |w| format!("{w}\n  bad: [\n"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].starts_with(".github/workflows/test.yml: not YAML:"),
            "{found:?}"
        );
    }

    #[test]
    fn make_commands_are_read_from_shell() {
        let script = "set -e\nmake test\nref=$(make --no-print-directory \\\n push REGISTRY=x/y | tail -1)\n\
                      echo make-believe; make -j2 a b > log # make c\ncosign sign \"$ref\"";
        assert_eq!(make_targets(script), ["test", "push", "a", "b"]);
    }

    #[test]
    fn makefile_targets_leave_out_variables_and_special_targets() {
        let makefile = "SHELL := /bin/bash\nIMAGE = $(R):v1\nexport X := 1\n.PHONY: a b\n\
                        a b: c\n\t@echo x: y\nc:\n%.o: %.c\n# d: e\n";
        let want: BTreeSet<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(makefile_targets(makefile), want);
    }

    #[test]
    fn a_documented_command_is_a_whole_word() {
        assert!(documents("run `make test` first", "make test"));
        assert!(!documents("run `make tests` first", "make test"));
        assert!(!documents("run `make test.x` first", "make test"));
    }
}
