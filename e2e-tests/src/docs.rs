//! The operator's commands as the docs write them, and what runs them: every command of the
//! fenced `console` and `sh` blocks of README.md and docs/*.md; a stand-in `kubectl` that
//! records each call a command makes, answers `get` with the simulated workloads and `wait`
//! for the policies installed; and `Site`, the cluster simulation's workloads, installed
//! policies and other applied objects, which performs the recorded calls (writes through each
//! workload's admission chain). The shell, make and jq are the real ones.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};

use restage_gate_release::repository;
use serde_json::{json, Value};

use restage_gate::workload::Workload;

use crate::cluster::{Cluster, Kind, Policy};

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
pub fn fenced_blocks(markdown: &str, languages: &[&str]) -> Vec<String> {
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

const STAND_IN_KUBECTL: &str = r#"#!/bin/sh
# Stands in for kubectl: records the call (arguments separated by \037, calls by \036), answers
# `get RESOURCES` with the held workloads of those resources (from $KUBECTL_GET/RESOURCE.json
# and .txt; a resource the cluster does not serve fails as kubectl does), `api-resources
# --api-group=G -o name` with the resources of G the cluster serves, and `wait` for a
# ClusterAdmissionPolicy once it is installed.
printf '%s\037' "$@" >> "$KUBECTL_CALLS"
printf '\036' >> "$KUBECTL_CALLS"
case "$1" in
  api-resources)
    for arg in "$@"; do
      case "$arg" in
        --api-group=*) awk -v g="${arg#--api-group=}" '$1 == g { print $2 "." $1 }' "$KUBECTL_API_RESOURCES" ;;
      esac
    done ;;
  get)
    shift
    resources=
    for arg in "$@"; do
      case "$arg" in
        -*) ;;
        *) resources=$arg; break ;;
      esac
    done
    for r in $(echo "$resources" | tr ',' ' '); do
      if [ ! -e "$KUBECTL_GET/$r.json" ]; then
        echo "error: the server doesn't have a resource type \"$r\"" >&2
        exit 1
      fi
    done
    case " $* " in
      *" -o json "*)
        printf '{"apiVersion": "v1", "kind": "List", "items": ['
        sep=
        for r in $(echo "$resources" | tr ',' ' '); do
          if [ -s "$KUBECTL_GET/$r.json" ]; then
            printf '%s' "$sep"
            cat "$KUBECTL_GET/$r.json"
            sep=,
          fi
        done
        printf ']}\n' ;;
      *)
        found=
        for r in $(echo "$resources" | tr ',' ' '); do
          if [ -s "$KUBECTL_GET/$r.txt" ]; then
            cat "$KUBECTL_GET/$r.txt"
            found=1
          fi
        done
        [ -n "$found" ] || echo "No resources found" ;;
    esac ;;
  wait)
    for arg in "$@"; do
      case "$arg" in
        clusteradmissionpolicy/*)
          name=${arg#clusteradmissionpolicy/}
          if grep -qx "$name" "$KUBECTL_POLICIES"; then
            echo "clusteradmissionpolicy.policies.kubewarden.io/$name condition met"
          else
            echo "error: clusteradmissionpolicies.policies.kubewarden.io \"$name\" not found" >&2
            exit 1
          fi ;;
      esac
    done ;;
esac
"#;

/// A scratch directory with the stand-in `kubectl`, removed on drop.
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
        std::fs::create_dir_all(dir.join("bin")).expect("scratch directory");
        let kubectl = dir.join("bin/kubectl");
        std::fs::write(&kubectl, STAND_IN_KUBECTL).expect("stand-in kubectl");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&kubectl, std::fs::Permissions::from_mode(0o755))
            .expect("executable");
        Shell { dir }
    }

    /// A file in the scratch directory.
    pub fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Runs `command` with bash (`-euo pipefail`) at the top of the repository, the stand-in
    /// kubectl first on the PATH answering from `site`, with `env` set; its output and the
    /// kubectl calls it made, each as its arguments.
    pub fn run(
        &self,
        command: &str,
        site: &Site,
        env: &[(&str, &str)],
    ) -> (Output, Vec<Vec<String>>) {
        // per name kubectl takes for a served resource (`deployments`, `deployment`,
        // `deployments.apps`): its held objects, as JSON list items and as table rows
        let get = self.file("get");
        let _ = std::fs::remove_dir_all(&get);
        std::fs::create_dir_all(&get).expect("get/");
        let mut answers: BTreeMap<String, (Vec<String>, String)> = BTreeMap::new();
        for w in site.served() {
            for name in resource_names(w) {
                answers.entry(name).or_default();
            }
        }
        for o in site.held() {
            let Some(w) = workload_of(o) else { continue };
            for name in resource_names(w) {
                let (items, rows) = answers.entry(name).or_default();
                items.push(o.to_string());
                rows.push_str(&format!("{} {}\n", o["kind"], o["metadata"]["name"]));
            }
        }
        for (name, (items, rows)) in &answers {
            std::fs::write(get.join(format!("{name}.json")), items.join(",")).expect("items");
            std::fs::write(get.join(format!("{name}.txt")), rows).expect("rows");
        }
        let served: String = site
            .served()
            .iter()
            .map(|w| format!("{} {}\n", w.declared().group, w.declared().resource))
            .collect();
        std::fs::write(self.file("api-resources.txt"), served).expect("api-resources");
        let installed: String = site.installed().iter().map(|n| format!("{n}\n")).collect();
        std::fs::write(self.file("policies.txt"), installed).expect("policies");
        std::fs::write(self.file("calls"), "").expect("calls");
        let path = format!(
            "{}:{}",
            self.file("bin").display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut bash = Command::new("bash");
        bash.args(["-euo", "pipefail", "-c", command])
            .current_dir(root())
            .env("PATH", path)
            .env("KUBECTL_CALLS", self.file("calls"))
            .env("KUBECTL_GET", &get)
            .env("KUBECTL_API_RESOURCES", self.file("api-resources.txt"))
            .env("KUBECTL_POLICIES", self.file("policies.txt"));
        // A make around this suite (`make test`) hands its jobserver down; the documented
        // commands run as from a terminal.
        for var in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"] {
            bash.env_remove(var);
        }
        bash.envs(env.iter().copied());
        let out = bash.output().expect("bash");
        let calls = std::fs::read_to_string(self.file("calls")).expect("calls");
        let calls = calls
            .split('\u{1e}')
            .filter(|c| !c.is_empty())
            .map(|c| {
                c.split('\u{1f}')
                    .filter(|a| !a.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        (out, calls)
    }

    /// Runs `command` as `run` does, which must succeed, and has `site` perform the kubectl
    /// calls it made; its stdout and the calls.
    pub fn perform(&self, command: &str, site: &mut Site) -> (String, Vec<Vec<String>>) {
        let (out, calls) = self.run(command, site, &[]);
        assert!(
            out.status.success(),
            "`{command}` failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for call in &calls {
            site.perform(call);
        }
        (String::from_utf8_lossy(&out.stdout).into_owned(), calls)
    }
}

impl Drop for Shell {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A kubectl call read the way kubectl reads it: its verb, positional arguments and flags.
#[derive(Debug, Clone, Default)]
pub struct Call {
    pub verb: String,
    pub args: Vec<String>,
    pub flags: BTreeMap<String, String>,
    pub all_namespaces: bool,
    /// `-f` may come several times.
    pub files: Vec<String>,
}

/// Flags of the calls the docs make that take a value as their next argument.
const VALUE_FLAGS: [&str; 6] = ["-n", "-l", "-o", "-p", "--type", "-f"];

impl Call {
    pub fn parse(call: &[String]) -> Call {
        let mut out = Call {
            verb: call.first().cloned().unwrap_or_default(),
            ..Call::default()
        };
        let mut rest = call.iter().skip(1);
        while let Some(arg) = rest.next() {
            if arg == "-A" || arg == "--all-namespaces" {
                out.all_namespaces = true;
            } else if VALUE_FLAGS.contains(&arg.as_str()) {
                let value = rest.next().cloned().unwrap_or_default();
                if arg == "-f" {
                    out.files.push(value);
                } else {
                    out.flags.insert(arg.clone(), value);
                }
            } else if let Some((flag, value)) =
                arg.split_once('=').filter(|_| arg.starts_with("--"))
            {
                out.flags.insert(flag.into(), value.into());
            } else if arg.starts_with('-') {
                out.flags.insert(arg.clone(), String::new());
            } else {
                out.args.push(arg.clone());
            }
        }
        out
    }

    pub fn flag(&self, name: &str) -> Option<&str> {
        self.flags.get(name).map(String::as_str)
    }
}

/// The names kubectl takes for a kind's resource: `deployments`, `deployment`,
/// `deployments.apps` (for the core group, without the dot).
fn resource_names(w: &dyn Workload) -> Vec<String> {
    let k = w.declared();
    let mut names = vec![k.resource.to_string(), k.kind.to_lowercase()];
    if !k.group.is_empty() {
        names.push(format!("{}.{}", k.resource, k.group));
    }
    names
}

/// The kind of a stored object, when the policy holds it.
fn workload_of(object: &Value) -> Option<&'static dyn Workload> {
    let api = object["apiVersion"].as_str()?;
    let group = api.rsplit_once('/').map_or("", |(g, _)| g);
    restage_gate::workload::of(group, object["kind"].as_str()?)
}

/// Whether a kubectl resource name (`statefulset`, `statefulsets`, `statefulsets.apps`) is
/// `kind`'s.
pub fn is_kind(resource: &str, kind: Kind) -> bool {
    resource_names(kind.workload())
        .iter()
        .any(|n| n == resource)
}

/// The workloads of a cluster, the policies installed in it, its namespaces' labels and the
/// other objects applied to it, as the documented kubectl calls change them. Each workload is
/// a `Cluster` of the simulation, with the same policies installed.
pub struct Site {
    pub workloads: Vec<Cluster>,
    /// Labels of the namespaces `kubectl label namespace` touched.
    pub namespaces: BTreeMap<String, BTreeMap<String, String>>,
    installed: Vec<String>,
    /// Applied objects the simulation does not model (a CronJob, RBAC, a
    /// ValidatingAdmissionPolicy): only that they exist, by `object_name`.
    objects: BTreeSet<String>,
}

/// The documents of a manifest the docs apply or delete, a path from the top of the repository.
fn manifest(file: &str) -> Vec<Value> {
    let text = repository::read(&root(), file).unwrap_or_else(|e| panic!("{e}"));
    repository::yaml_documents(file, &text).unwrap_or_else(|e| panic!("{e}"))
}

/// An object as kubectl names it: `Kind name`, or `Kind namespace/name` for a namespaced one.
fn object_name(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let meta = &object["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    match meta["namespace"].as_str() {
        Some(namespace) => format!("{kind} {namespace}/{name}"),
        None => format!("{kind} {name}"),
    }
}

const POLICY_KIND: &str = "ClusterAdmissionPolicy";

impl Site {
    /// Workloads created with no policy installed.
    pub fn new(workloads: Vec<Cluster>) -> Site {
        Site {
            workloads,
            namespaces: BTreeMap::new(),
            installed: Vec::new(),
            objects: BTreeSet::new(),
        }
    }

    /// The objects of manifest `file` that are in the cluster, named as `kubectl` names them
    /// (`CronJob kubewarden/restage-gate-window-release`), in the file's order.
    pub fn objects_of(&self, file: &str) -> Vec<String> {
        manifest(file)
            .iter()
            .filter(|document| {
                if document["kind"] == POLICY_KIND {
                    let name = document["metadata"]["name"].as_str().unwrap_or_default();
                    self.installed.iter().any(|n| n == name)
                } else {
                    self.objects.contains(&object_name(document))
                }
            })
            .map(object_name)
            .collect()
    }

    /// `kubectl apply` of one document: a ClusterAdmissionPolicy enters every workload's
    /// admission chain; any other object is only kept as existing.
    fn apply(&mut self, file: &str, document: &Value) {
        if document["kind"] != POLICY_KIND {
            self.objects.insert(object_name(document));
            return;
        }
        let policy = Policy::from_manifest(document).unwrap_or_else(|e| panic!("{file}: {e}"));
        self.installed.retain(|n| *n != policy.name);
        self.installed.push(policy.name.clone());
        for w in &mut self.workloads {
            w.apply_policy(policy.clone());
        }
    }

    /// `kubectl delete` of the ClusterAdmissionPolicy `name`: it leaves every workload's
    /// admission chain. Whether it was installed.
    fn delete_policy(&mut self, name: &str) -> bool {
        let installed = self.installed.iter().any(|n| n == name);
        self.installed.retain(|n| n != name);
        for w in &mut self.workloads {
            w.delete_policy(name);
        }
        installed
    }

    /// The names of the ClusterAdmissionPolicies installed.
    pub fn installed(&self) -> &[String] {
        &self.installed
    }

    /// The held kinds the cluster serves: every kind of an API group it has a workload of (a
    /// group of custom resources is served only where its CRD is installed).
    pub fn served(&self) -> Vec<&'static dyn Workload> {
        let groups: BTreeSet<&str> = self
            .workloads
            .iter()
            .map(|c| c.kind.workload().declared().group)
            .collect();
        restage_gate::workload::kinds()
            .filter(|w| groups.contains(w.declared().group))
            .collect()
    }

    pub fn held(&self) -> Vec<&Value> {
        self.workloads
            .iter()
            .filter(|c| c.is_held())
            .filter_map(|c| c.object.as_ref())
            .collect()
    }

    /// The workloads of kind `resource` (`statefulset`, `deployments`) named `name` in
    /// `namespace`; the docs' placeholders `NAME` and `NAMESPACE` stand for any.
    fn find(&self, resource: &str, name: &str, namespace: &str) -> Vec<usize> {
        (0..self.workloads.len())
            .filter(|&i| {
                let w = &self.workloads[i];
                let meta = w.object.as_ref().map(|o| &o["metadata"]);
                let named = |key: &str, want: &str, placeholder: &str| {
                    want == placeholder || meta.is_some_and(|m| m[key] == json!(want))
                };
                is_kind(resource, w.kind)
                    && named("name", name, "NAME")
                    && named("namespace", namespace, "NAMESPACE")
            })
            .collect()
    }

    /// The one workload `find` finds.
    fn workload(&mut self, resource: &str, name: &str, namespace: &str) -> &mut Cluster {
        let found = self.find(resource, name, namespace);
        assert_eq!(
            found.len(),
            1,
            "{resource}/{name} -n {namespace}: the simulation has {} such workloads",
            found.len()
        );
        &mut self.workloads[found[0]]
    }

    /// Performs a recorded kubectl call.
    pub fn perform(&mut self, call: &[String]) {
        let c = Call::parse(call);
        match c.verb.as_str() {
            "get" | "wait" | "api-resources" => {}
            "apply" => {
                assert!(!c.files.is_empty(), "kubectl apply without -f: {call:?}");
                for file in &c.files {
                    for document in manifest(file) {
                        self.apply(file, &document);
                    }
                }
            }
            "delete" => {
                // kubectl deletes what is there and fails on the rest, unless told to ignore it.
                let mut missing = Vec::new();
                for file in &c.files {
                    for document in manifest(file) {
                        let name = object_name(&document);
                        let there = if document["kind"] == POLICY_KIND {
                            let policy = document["metadata"]["name"].as_str();
                            self.delete_policy(policy.unwrap_or_default())
                        } else {
                            self.objects.remove(&name)
                        };
                        if !there {
                            missing.push(name);
                        }
                    }
                }
                if c.files.is_empty() {
                    assert_eq!(
                        c.args.first().map(String::as_str),
                        Some("clusteradmissionpolicy"),
                        "{call:?}"
                    );
                    for name in &c.args[1..] {
                        if !self.delete_policy(name) {
                            missing.push(format!("{POLICY_KIND} {name}"));
                        }
                    }
                }
                let ignore_not_found = c.flag("--ignore-not-found").is_some_and(|v| v != "false");
                assert!(
                    missing.is_empty() || ignore_not_found,
                    "{missing:?} not there: kubectl would fail on {call:?}"
                );
            }
            "annotate" => {
                let annotation = c.args[1..]
                    .iter()
                    .find_map(|a| a.split_once('='))
                    .unwrap_or_else(|| panic!("an annotation to set: {call:?}"));
                for i in self.selected(&c) {
                    assert!(
                        self.workloads[i].annotate(annotation.0, annotation.1),
                        "{call:?}"
                    );
                }
            }
            "rollout" => {
                let (action, target) = (c.args[0].as_str(), c.args[1].as_str());
                let (resource, name) = target.split_once('/').expect("KIND/NAME");
                let namespace = c.flag("-n").expect("a namespace").to_string();
                let w = self.workload(resource, name, &namespace);
                let written = match action {
                    "restart" => w.rollout_restart(),
                    "resume" => w.rollout_resume(),
                    other => panic!("kubectl rollout {other}: not simulated"),
                };
                assert!(written, "{call:?}");
            }
            "label" => {
                assert_eq!(c.args[0], "namespace", "{call:?}");
                let labels = self.namespaces.entry(c.args[1].clone()).or_default();
                for (k, v) in c.args[2..].iter().filter_map(|a| a.split_once('=')) {
                    labels.insert(k.into(), v.into());
                }
            }
            "patch" => {
                assert_eq!(c.flag("--type"), Some("merge"), "{call:?}");
                let patch: Value =
                    serde_json::from_str(c.flag("-p").expect("a patch")).expect("JSON patch");
                let namespace = c.flag("-n").expect("a namespace").to_string();
                // `KIND/NAME` or `KIND NAME`, as kubectl takes either
                let (resource, name) = match c.args[0].split_once('/') {
                    Some((resource, name)) => (resource.to_string(), name.to_string()),
                    None => (c.args[0].clone(), c.args[1].clone()),
                };
                let w = self.workload(&resource, &name, &namespace);
                assert!(w.merge_patch(&patch), "{call:?}");
            }
            _ => panic!(
                "a documented command runs a kubectl call the simulation does not know: {call:?}"
            ),
        }
    }

    /// The workloads an `annotate` or `get` call selects: `KIND/NAME -n NAMESPACE`, or a list
    /// of resources with `-A` and a `-l key=value` selector.
    fn selected(&self, c: &Call) -> Vec<usize> {
        let resources = c.args.first().map(String::as_str).unwrap_or_default();
        if let Some((resource, name)) = resources.split_once('/') {
            let namespace = c.flag("-n").expect("a namespace");
            let found = self.find(resource, name, namespace);
            assert_eq!(found.len(), 1, "{resources} -n {namespace}");
            return found;
        }
        assert!(c.all_namespaces, "all namespaces: {c:?}");
        let served = self.served();
        for r in resources.split(',') {
            assert!(
                served
                    .iter()
                    .any(|w| resource_names(*w).iter().any(|n| n == r)),
                "the server doesn't have a resource type {r:?}: kubectl would fail on {c:?}"
            );
        }
        let selector = c.flag("-l").expect("a label selector");
        let (key, value) = selector.split_once('=').expect("key=value selector");
        (0..self.workloads.len())
            .filter(|&i| {
                let w = &self.workloads[i];
                let object = w.object.clone().unwrap_or_default();
                object["metadata"]["labels"][key] == json!(value)
                    && resources.split(',').any(|r| is_kind(r, w.kind))
            })
            .collect()
    }

    /// What `kubectl get` with `-o custom-columns=SPEC` prints for the workloads the call
    /// selects: a header of the column names, then a row per workload, `<none>` for a path
    /// with no value.
    pub fn custom_columns(&self, call: &[String]) -> String {
        let c = Call::parse(call);
        let spec = c
            .flag("-o")
            .and_then(|o| o.strip_prefix("custom-columns="))
            .expect("-o custom-columns=…");
        let columns: Vec<(&str, Vec<String>)> = spec
            .split(',')
            .map(|column| {
                let (name, path) = column.split_once(':').expect("NAME:PATH");
                (name, json_path(path))
            })
            .collect();
        let mut out = columns
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(" ");
        out.push('\n');
        for i in self.selected(&c) {
            let object = self.workloads[i].object.clone().unwrap_or_default();
            let row: Vec<String> = columns
                .iter()
                .map(|(_, keys)| {
                    let value = keys.iter().fold(&object, |v, k| &v[k.as_str()]);
                    match value {
                        Value::String(s) => s.clone(),
                        Value::Null => "<none>".into(),
                        other => other.to_string(),
                    }
                })
                .collect();
            out.push_str(&row.join(" "));
            out.push('\n');
        }
        out
    }
}

/// The keys of a kubectl JSONPath such as `.metadata.annotations.restage-gate\.io/held-since`.
fn json_path(path: &str) -> Vec<String> {
    let mut keys = vec![String::new()];
    let mut chars = path.strip_prefix('.').unwrap_or(path).chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => keys.last_mut().expect("a key").extend(chars.next()),
            '.' => keys.push(String::new()),
            c => keys.last_mut().expect("a key").push(c),
        }
    }
    keys
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
    fn a_call_reads_as_kubectl_reads_it() {
        let call: Vec<String> = [
            "get",
            "pods",
            "-A",
            "-l",
            "a=b",
            "-o",
            "json",
            "--timeout=5m",
        ]
        .map(String::from)
        .to_vec();
        let c = Call::parse(&call);
        assert_eq!(c.args, ["pods"]);
        assert!(c.all_namespaces);
        assert_eq!(c.flag("-l"), Some("a=b"));
        assert_eq!(c.flag("--timeout"), Some("5m"));
        assert_eq!(
            json_path(".metadata.annotations.restage-gate\\.io/pending"),
            ["metadata", "annotations", "restage-gate.io/pending"]
        );
    }

    fn call(text: &str) -> Vec<String> {
        text.split(' ').map(String::from).collect()
    }

    #[test]
    fn a_file_applied_and_deleted_adds_and_removes_each_of_its_objects() {
        let mut site = Site::new(vec![]);
        site.perform(&call("apply -f policy.yaml -f window-release.yaml"));
        assert_eq!(site.installed(), ["restage-gate"]);
        assert_eq!(
            site.objects_of("policy.yaml"),
            ["ClusterAdmissionPolicy restage-gate"]
        );
        // objects the simulation does not model: kept as existing
        let applied = site.objects_of("window-release.yaml");
        assert_eq!(applied.len(), manifest("window-release.yaml").len());
        assert!(applied.contains(&"CronJob kubewarden/restage-gate-window-release".to_string()));
        assert!(applied.contains(&"ClusterRole restage-gate-window-release".to_string()));

        site.perform(&call("delete -f window-release.yaml --ignore-not-found"));
        assert_eq!(site.objects_of("window-release.yaml"), Vec::<String>::new());
        assert_eq!(
            site.installed(),
            ["restage-gate"],
            "another file's policy stays"
        );
        // again: nothing there, nothing to fail on
        site.perform(&call("delete -f window-release.yaml --ignore-not-found"));
        site.perform(&call("delete -f policy.yaml"));
        assert!(site.installed().is_empty());
    }

    #[test]
    #[should_panic(expected = "kubectl would fail")]
    fn deleting_what_is_not_there_fails_without_ignore_not_found() {
        Site::new(vec![]).perform(&call("delete -f window-release.yaml"));
    }

    /// A cluster with one workload of each kind, each held.
    fn held_site() -> Site {
        let kinds = crate::cluster::every_kind();
        let mut site = Site::new(
            kinds
                .iter()
                .map(|&k| {
                    Cluster::with_policies(
                        crate::host::policy_under_test(),
                        k,
                        crate::cluster::Order::PolicyFirst,
                        vec![],
                        1,
                    )
                })
                .collect(),
        );
        site.perform(&call("apply -f policy.yaml"));
        for c in &mut site.workloads {
            assert!(c.bind(&restage_gate_testkit::korifi::orders_db()));
            assert!(c.is_held(), "{}", c.kind.name());
        }
        site
    }

    #[test]
    fn get_lists_the_held_workloads_of_the_resources_it_names_only() {
        let site = held_site();
        let shell = Shell::new();
        for c in &site.workloads {
            let resource = c.kind.workload().declared().resource;
            let (out, _) = shell.run(
                &format!("kubectl get {resource} -A -l restage-gate.io/held=true -o json"),
                &site,
                &[],
            );
            assert!(out.status.success(), "{out:?}");
            let list: Value = serde_json::from_slice(&out.stdout).expect("JSON");
            let kinds: Vec<&Value> = list["items"]
                .as_array()
                .expect("items")
                .iter()
                .map(|o| &o["kind"])
                .collect();
            assert_eq!(kinds, [&json!(c.kind.name())], "{resource}");
            let (out, _) = shell.run(&format!("kubectl get {resource} -A"), &site, &[]);
            assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
        }
    }

    #[test]
    fn a_merge_patch_names_its_object_as_kind_slash_name_or_kind_and_name() {
        let mut site = held_site();
        for (i, form) in ["{kind}/{name}", "{kind} {name}"].iter().enumerate() {
            for w in 0..site.workloads.len() {
                let object = site.workloads[w].object.clone().expect("stored");
                let target = form
                    .replace("{kind}", &site.workloads[w].kind.name().to_lowercase())
                    .replace("{name}", object["metadata"]["name"].as_str().expect("name"));
                let namespace = object["metadata"]["namespace"].as_str().expect("namespace");
                let mut c = call(&format!("patch {target} -n {namespace} --type merge -p"));
                c.push(format!(
                    r#"{{"metadata":{{"labels":{{"patched":"{i}"}}}}}}"#
                ));
                site.perform(&c);
                let stored = site.workloads[w].object.clone().expect("stored");
                assert_eq!(
                    stored["metadata"]["labels"]["patched"],
                    json!(i.to_string()),
                    "{target}"
                );
            }
        }
    }

    #[test]
    fn get_of_a_resource_the_cluster_does_not_serve_fails_as_kubectl_does() {
        let site = held_site();
        // a kind the policy does not hold, so no workload of the site serves it
        let (out, _) = Shell::new().run("kubectl get cronjobs -A -o json", &site, &[]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr)
            .contains("the server doesn't have a resource type \"cronjobs\""));
    }

    #[test]
    #[should_panic(expected = "kubectl would fail")]
    fn annotating_a_resource_the_cluster_does_not_serve_fails() {
        held_site().perform(&call(
            "annotate cronjobs -A -l restage-gate.io/held=true restage-gate.io/release=now",
        ));
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
