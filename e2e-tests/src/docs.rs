//! The operator's commands as the docs write them, and what runs them: every command of the
//! fenced `console` and `sh` blocks of README.md and docs/*.md, and bash at the top of the
//! repository for those that run here. A command that talks to a cluster (kubectl) runs with
//! the real kubectl on the real control plane (e2e-tests/control-plane/scenarios/docs_test.go).

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use restage_gate_release::repository;
use serde_json::Value;

/// The top of the repository, where the documented commands run.
pub fn root() -> PathBuf {
    repository::root()
}

/// The docs an operator copies commands from: README.md and docs/*.md.
pub fn doc_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    files.sort();
    files.insert(0, "README.md".into());
    files
}

/// Fenced blocks in these languages hold commands.
pub const SHELL_BLOCKS: [&str; 4] = ["console", "sh", "bash", "shell"];

/// A command as a doc writes it: its comments left out, a command continued over several
/// lines (a trailing `\` or pipe, an open quote) kept as its lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocCommand {
    pub file: String,
    pub text: String,
}

/// Every command of the shell blocks of `file`, in order.
pub fn commands_of(file: &str) -> Vec<DocCommand> {
    let text = repository::read(&root(), file).unwrap_or_else(|e| panic!("{e}"));
    shell_blocks(&text)
        .iter()
        .flat_map(|block| split_commands(block))
        .map(|text| DocCommand {
            file: file.into(),
            text,
        })
        .collect()
}

/// Every command of every doc.
pub fn all_commands() -> Vec<DocCommand> {
    doc_files().iter().flat_map(|f| commands_of(f)).collect()
}

/// The bodies of the fenced blocks in `SHELL_BLOCKS` languages, without the indentation of
/// their fence (a block inside a list item).
pub fn shell_blocks(markdown: &str) -> Vec<String> {
    fenced_blocks(markdown, &SHELL_BLOCKS)
}

/// The bodies of the fenced blocks in `languages`, in order, as `shell_blocks` reads them.
fn fenced_blocks(markdown: &str, languages: &[&str]) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for line in markdown.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            None => {
                if let Some(lang) = trimmed.strip_prefix("```") {
                    if languages.contains(&lang.trim()) {
                        open = Some((indent, String::new()));
                    }
                }
            }
            Some((fence, body)) => {
                if trimmed.trim_end() == "```" {
                    blocks.push(std::mem::take(body));
                    open = None;
                } else {
                    let cut = line
                        .char_indices()
                        .take_while(|(i, c)| *i < *fence && *c == ' ')
                        .count();
                    body.push_str(&line[cut..]);
                    body.push('\n');
                }
            }
        }
    }
    blocks
}

/// The commands of a shell block, as bash would read them: a newline ends a command unless it
/// is inside quotes or the line ends with `\`, `|`, `&&` or `||`; a `#` that starts a word
/// outside quotes starts a comment, which is left out.
pub fn split_commands(block: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut current = String::new();
    let (mut single, mut double, mut comment) = (false, false, false);
    let mut chars = block.chars().peekable();
    while let Some(c) = chars.next() {
        if comment {
            if c != '\n' {
                continue;
            }
            comment = false;
        }
        match c {
            '\\' if !single => {
                current.push(c);
                if let Some(next) = chars.next() {
                    current.push(next);
                }
                continue;
            }
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && current.chars().last().is_none_or(char::is_whitespace) => {
                comment = true;
                continue;
            }
            '\n' if !single && !double => {
                let line = current.trim_end();
                let continued = ["\\", "|", "&&", "||"].iter().any(|t| line.ends_with(t));
                if continued {
                    current.truncate(line.len());
                    current.push('\n');
                } else {
                    let text = tidy(&current);
                    if !text.is_empty() {
                        commands.push(text);
                    }
                    current.clear();
                }
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    let text = tidy(&current);
    if !text.is_empty() {
        commands.push(text);
    }
    commands
}

/// Lines without trailing blanks; the command without leading and trailing ones.
fn tidy(command: &str) -> String {
    let lines: Vec<&str> = command.lines().map(str::trim_end).collect();
    lines.join("\n").trim().to_string()
}

/// Whether a doc's command is the one an entry of a test's list names: the same text, or,
/// for an entry ending in ` …`, a command that starts with the rest.
pub fn names(entry: &str, command: &str) -> bool {
    match entry.strip_suffix(" …") {
        Some(start) => command.starts_with(start),
        None => entry == command,
    }
}

/// A scratch directory, removed on drop, and bash to run a documented command in.
pub struct Shell {
    dir: PathBuf,
}

impl Default for Shell {
    fn default() -> Self {
        Shell::new()
    }
}

impl Shell {
    pub fn new() -> Shell {
        static SHELLS: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "restage-gate-docs-{}-{}",
            std::process::id(),
            SHELLS.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        Shell { dir }
    }

    /// A file in the scratch directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Runs `command` with bash (`-euo pipefail`) at the top of the repository.
    pub fn run(&self, command: &str) -> Output {
        let mut bash = Command::new("bash");
        bash.args(["-euo", "pipefail", "-c", command])
            .current_dir(root());
        // A make around this suite (`make test`) hands its jobserver down; the documented
        // commands run as from a terminal.
        for var in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"] {
            bash.env_remove(var);
        }
        bash.output().expect("bash")
    }

    /// Runs `command` as `run` does, which must succeed; its stdout.
    pub fn perform(&self, command: &str) -> String {
        let out = self.run(command);
        assert!(
            out.status.success(),
            "`{command}` failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Whether a Kubernetes label selector (`matchLabels`, `matchExpressions` with `In`, `NotIn`,
/// `Exists`, `DoesNotExist`) selects an object with `labels`.
pub fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels[k].as_str();
    let match_labels = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap_or_default();
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str() {
                Some("Exists") => label(key).is_some(),
                Some("DoesNotExist") => label(key).is_none(),
                Some("In") => label(key).is_some_and(|v| values.contains(&v)),
                Some("NotIn") => label(key).is_none_or(|v| !values.contains(&v)),
                other => panic!("selector operator {other:?} is not Kubernetes'"),
            }
        });
    match_labels && expressions
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_block_splits_into_commands_as_bash_reads_it() {
        let block = "kubectl apply -f a.yaml   # a comment\nkubectl get x \\\n  -o json |\n  jq -r '\n    .items # not a comment\n  ' |\n  sh\n\necho '#' done\n";
        assert_eq!(
            split_commands(block),
            [
                "kubectl apply -f a.yaml",
                "kubectl get x \\\n  -o json |\n  jq -r '\n    .items # not a comment\n  ' |\n  sh",
                "echo '#' done",
            ]
        );
    }

    #[test]
    fn blocks_inside_list_items_lose_their_fence_indentation() {
        let doc =
            "1. Step:\n\n   ```console\n   kubectl get x\n   ```\n\n```yaml\nnot: a command\n```\n";
        assert_eq!(shell_blocks(doc), ["kubectl get x\n"]);
    }

    #[test]
    fn selectors_select_as_kubernetes_does() {
        let labels = json!({"korifi.cloudfoundry.org/app-guid": "0f8e", "tier": "web"});
        let exists = json!({"matchExpressions": [{"key": "korifi.cloudfoundry.org/app-guid", "operator": "Exists"}]});
        assert!(selects(&exists, &labels));
        assert!(!selects(&exists, &json!({"tier": "web"})));
        assert!(selects(&json!({"matchLabels": {"tier": "web"}}), &labels));
        assert!(!selects(&json!({"matchLabels": {"tier": "db"}}), &labels));
        let not_in =
            json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]});
        assert!(!selects(&not_in, &labels));
    }
}
