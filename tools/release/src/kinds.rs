//! What users read about the kinds the module holds, generated from the kinds table
//! (`restage_gate::workload::KINDS`, handed in as [`HeldKind`]s): the webhook rules of
//! `metadata.yml` and of the chart's policies (one rule per API group), the Artifact Hub
//! resources, the chart's window job (its resources, RBAC rules, admission policy match and
//! per-kind control maps: each control's field, held value, remembered annotation, default and
//! keys; and a job template per group of custom resources), the install guide's webhook
//! example, the uninstall procedure's commands, the lists of kinds in README.md and
//! docs/install.md, and the table of held kinds in docs/design.md. `make kinds` writes them
//! (after `kind_modules` lists the kinds' files), and `make manifests` renders the top-level
//! manifests from the chart; `make test` fails while one is stale (`tools/release/tests/kinds.rs`,
//! `make check-chart`).
//!
//! YAML is edited in place, the text under a key replaced and its comments kept. In Markdown a
//! list in prose sits between `<!-- kinds:FORM -->` and `<!-- /kinds -->` (FORM says how it is
//! written, see [`prose`]); a command block between `<!-- NAME:begin -->` and `<!-- NAME:end -->`.

use std::path::Path;

use serde_json::Value;

use crate::repository;

/// A kind the module holds, as the generated files need it.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldKind {
    pub group: String,
    pub version: String,
    /// `kind` as the API names it: `StatefulSet`.
    pub kind: String,
    /// The resource a rule names: `statefulsets`.
    pub resource: String,
    /// Where the control that holds rollouts sits, as object keys: `spec`, `paused`.
    pub control: Vec<String>,
    /// The control's value while held.
    pub held: Value,
    /// The value the API server gives the control when it is absent.
    pub default: Value,
    /// The annotation that remembers the replaced control.
    pub remembered: String,
    /// The keys of a control that is an object, each with its own members when its value is
    /// an object too; none for a control that is one value ([`control_keys`]).
    pub control_keys: Vec<ControlKey>,
    /// The command that applies held changes now, for the workload `NAME` in `NAMESPACE`.
    pub apply_now: String,
}

/// A key a control that is an object can have: `type`, `rollingUpdate`.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlKey {
    pub name: String,
    /// The members of its value when that is an object; none for a plain value.
    pub members: Vec<ControlMember>,
}

/// A member of a control's key whose value is an object: `partition`.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlMember {
    pub name: String,
    /// The value the API server writes when a write leaves the member out: a remembered
    /// control without the member is stored with it.
    pub filled: Value,
}

/// The members the API's object controls have below their keys (k8s.io/api `apps/v1`: each
/// update strategy's `rollingUpdate`), each with the value the API server fills in when a write
/// leaves it out (`SetDefaults_…` of `k8s.io/kubernetes/pkg/apis/apps/v1`; a StatefulSet's
/// `maxUnavailable` from Kubernetes 1.37). Which of them a kind's control takes is asked of the
/// kind, by [`control_keys`].
pub const CONTROL_MEMBERS: [(&str, i64); 3] =
    [("maxSurge", 0), ("maxUnavailable", 1), ("partition", 0)];

/// The keys of a kind's control, from what the kind answers: its API default (`default`, which
/// has every key of a defaulted control) and which values it accepts (`accepts`, restage-gate's
/// `Workload::accepts`). A key whose default value is an object has that value's members, filled
/// in as the default has them, and each member of [`CONTROL_MEMBERS`] the kind accepts there.
/// Sorted, as serde_json writes the JSON restage-gate remembers.
pub fn control_keys(default: &Value, accepts: impl Fn(&Value) -> bool) -> Vec<ControlKey> {
    let Some(keys) = default.as_object() else {
        return Vec::new();
    };
    let mut out: Vec<ControlKey> = keys
        .iter()
        .map(|(name, value)| {
            let mut members: Vec<ControlMember> = Vec::new();
            if let Some(own) = value.as_object() {
                members.extend(own.iter().map(|(member, filled)| ControlMember {
                    name: member.clone(),
                    filled: filled.clone(),
                }));
                for (member, filled) in CONTROL_MEMBERS {
                    let mut probe = default.clone();
                    probe[name.as_str()][member] = Value::from(filled);
                    if !own.contains_key(member) && accepts(&probe) {
                        members.push(ControlMember {
                            name: member.to_string(),
                            filled: Value::from(filled),
                        });
                    }
                }
                members.sort_by(|a, b| a.name.cmp(&b.name));
            }
            ControlKey {
                name: name.clone(),
                members,
            }
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// What restage-gate writes on a held workload besides a kind's remembered annotation, which
/// the uninstall procedure removes.
#[derive(Debug, Clone)]
pub struct Markers {
    /// The label that marks a held workload.
    pub held_label: String,
    /// Its other annotations (held since, pending, the release request).
    pub annotations: Vec<String>,
    /// The annotation that requests a release.
    pub release: String,
    /// The annotation that says since when a workload is held.
    pub held_since: String,
    /// The annotation that lists the held changes.
    pub pending: String,
}

/// The kinds of one API group, in the table's order.
#[derive(Debug)]
pub struct Group<'a> {
    pub group: &'a str,
    pub versions: Vec<&'a str>,
    pub kinds: Vec<&'a HeldKind>,
}

impl Group<'_> {
    pub fn resources(&self) -> Vec<&str> {
        self.kinds.iter().map(|k| k.resource.as_str()).collect()
    }

    /// Whether every API server serves the group ([`served_everywhere`]).
    pub fn served_everywhere(&self) -> bool {
        served_everywhere(self.group)
    }

    /// The manifest of the window job for a group that not every cluster serves:
    /// `window-release-argoproj.io.yaml`, applied only where the group is served.
    pub fn window_release_file(&self) -> Option<String> {
        window_release_file(self.group)
    }
}

/// Whether every API server serves `group`: a built-in group (`apps`, `batch`) has no dot in
/// its name, and a custom resource's group must have one, so a group without a dot is never
/// missing the way one whose CRD is not installed is.
pub fn served_everywhere(group: &str) -> bool {
    !group.contains('.')
}

/// The manifest of the window job for `group` when not every cluster serves it (the top-level
/// file, rendered from the chart's template of the same name under [`CHART_TEMPLATES`]).
pub fn window_release_file(group: &str) -> Option<String> {
    (!served_everywhere(group)).then(|| format!("window-release-{group}.yaml"))
}

/// The chart's templates, from the top of the repository.
pub const CHART_TEMPLATES: &str = "charts/restage-gate/templates";
/// The chart's helpers: the webhook rules every policy shares.
pub const CHART_HELPERS: &str = "charts/restage-gate/templates/_helpers.tpl";
/// The chart's window job: ServiceAccount, ClusterRole, CronJob and admission policy.
pub const CHART_WINDOW_RELEASE: &str = "charts/restage-gate/templates/window-release.yaml";
/// The window job's permission, applied after its admission policy.
pub const WINDOW_RELEASE_BINDING: &str = "window-release-binding.yaml";

/// The kinds by API group, groups in the order the table first names them.
pub fn groups(kinds: &[HeldKind]) -> Vec<Group<'_>> {
    let mut out: Vec<Group> = Vec::new();
    for k in kinds {
        let at = match out.iter().position(|g| g.group == k.group) {
            Some(at) => at,
            None => {
                out.push(Group {
                    group: &k.group,
                    versions: Vec::new(),
                    kinds: Vec::new(),
                });
                out.len() - 1
            }
        };
        let g = &mut out[at];
        if !g.versions.contains(&k.version.as_str()) {
            g.versions.push(&k.version);
        }
        g.kinds.push(k);
    }
    out
}

/// The files `make kinds` writes, from the top of the repository, besides the chart's window
/// job template for each group that not every cluster serves ([`Group::window_release_file`]).
pub const FILES: [&str; 8] = [
    "metadata.yml",
    CHART_HELPERS,
    CHART_WINDOW_RELEASE,
    "artifacthub-pkg.yml",
    "README.md",
    "docs/install.md",
    "docs/uninstall.md",
    "docs/design.md",
];

/// A generated file as it is and as the kinds table makes it; `None` for a file that is not
/// there, or that should not be (the window job of a group no kind has any more).
pub struct Generated {
    pub file: String,
    pub now: Option<String>,
    pub wanted: Option<String>,
}

/// What the first line of every window job template this generator writes says.
const GENERATED_BY: &str = "{{- /* Written by `make kinds` from the kinds table";

/// `window-release-*.yaml` under `dir` that this generator wrote: the chart's window jobs of
/// groups not every cluster serves (a file of anyone else's stays).
fn window_release_group_files(dir: &Path) -> Result<Vec<String>, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("window-release-") && n.ends_with(".yaml"))
        .filter(|n| repository::read(dir, n).is_ok_and(|text| text.contains(GENERATED_BY)))
        .collect();
    out.sort();
    Ok(out)
}

/// Every generated file, read under `root`, as it is and as `kinds` makes it.
pub fn generate(
    root: &Path,
    kinds: &[HeldKind],
    markers: &Markers,
) -> Result<Vec<Generated>, String> {
    if kinds.is_empty() {
        return Err("the kinds table is empty".into());
    }
    let mut out = Vec::new();
    let mut metadata_wanted = String::new();
    for file in FILES {
        let now = repository::read(root, file)?;
        let wanted = match file {
            "metadata.yml" => {
                let text = metadata(&now, kinds)?;
                metadata_wanted = text.clone();
                text
            }
            CHART_HELPERS => replace_lists(&now, file, "rules:", |i| webhook_rules(kinds, i))?,
            CHART_WINDOW_RELEASE => window_release(&now, kinds)?,
            "artifacthub-pkg.yml" => artifacthub(root, &metadata_wanted, &now)?,
            "README.md" => {
                let text = prose(&now, file, kinds)?;
                readme_blocks(&text, kinds, markers)?
            }
            "docs/install.md" => {
                let text = replace_lists(&now, file, "rules:", |i| webhook_rules(kinds, i))?;
                let text = prose(&text, file, kinds)?;
                replace_block(&text, file, "upgrade-held", &held_list(kinds, markers, ""))?
            }
            "docs/uninstall.md" => uninstall(&now, kinds, markers)?,
            "docs/design.md" => replace_block(&now, file, "design-kinds", &design_table(kinds))?,
            other => return Err(format!("{other}: not generated")),
        };
        out.push(Generated {
            file: file.to_string(),
            now: Some(now),
            wanted: Some(wanted),
        });
    }
    let mut wanted_groups = Vec::new();
    for g in groups(kinds) {
        if let Some(own) = g.window_release_file() {
            let file = format!("{CHART_TEMPLATES}/{own}");
            let now = root
                .join(&file)
                .exists()
                .then(|| repository::read(root, &file))
                .transpose()?;
            let wanted = window_release_of_group(&g)?;
            wanted_groups.push(file.clone());
            out.push(Generated {
                file,
                now,
                wanted: Some(wanted),
            });
        }
    }
    for own in window_release_group_files(&root.join(CHART_TEMPLATES))? {
        let file = format!("{CHART_TEMPLATES}/{own}");
        if !wanted_groups.contains(&file) {
            let now = repository::read(root, &file)?;
            out.push(Generated {
                file,
                now: Some(now),
                wanted: None,
            });
        }
    }
    Ok(out)
}

/// The kinds as Artifact Hub keywords: each kind in lower case.
fn kind_keywords(kinds: &[HeldKind]) -> Vec<String> {
    let mut out: Vec<String> = kinds.iter().map(|k| k.kind.to_lowercase()).collect();
    out.dedup();
    out
}

/// `metadata.yml`: its rules, and the kinds its Artifact Hub resources, keywords and
/// description name.
fn metadata(text: &str, kinds: &[HeldKind]) -> Result<String, String> {
    let file = "metadata.yml";
    let text = replace_lists(text, file, "rules:", |i| webhook_rules(kinds, i))?;
    let text = replace_value(
        &text,
        file,
        "io.artifacthub.resources:",
        &names(kinds).join(", "),
    )?;
    let key = "io.artifacthub.keywords:";
    let keywords = value_of(&text, file, key)?;
    let text = replace_value(&text, file, key, &keywords_with(&keywords, kinds))?;
    let key = "io.kubewarden.policy.description:";
    let description = value_of(&text, file, key)?;
    let (before, rest) = description.split_once(DESCRIPTION_KINDS.0).ok_or_else(|| {
        format!(
            "{file}: the description names the kinds after `{}`",
            DESCRIPTION_KINDS.0
        )
    })?;
    let (_, after) = rest.split_once(DESCRIPTION_KINDS.1).ok_or_else(|| {
        format!(
            "{file}: the description's kinds end before `{}`",
            DESCRIPTION_KINDS.1
        )
    })?;
    let description = format!(
        "{before}{}{}{}{after}",
        DESCRIPTION_KINDS.0,
        list("kinds-and", kinds)?,
        DESCRIPTION_KINDS.1
    );
    replace_value(&text, file, key, &description)
}

/// What comes before and after the list of kinds in the policy's one-line description.
const DESCRIPTION_KINDS: (&str, &str) = ("service-binding changes to ", " until ");

/// `a, b, c`: the keywords with the kinds' own written where the first of them was (or
/// after the others), each once.
fn keywords_with(keywords: &str, kinds: &[HeldKind]) -> String {
    let ours = kind_keywords(kinds);
    let mut out: Vec<String> = Vec::new();
    let mut at = None;
    for k in keywords.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        if ours.iter().any(|o| o == k) {
            at.get_or_insert(out.len());
        } else {
            out.push(k.to_string());
        }
    }
    let at = at.unwrap_or(out.len());
    out.splice(at..at, ours);
    out.join(", ")
}

/// The value of the one line that starts with `key`.
fn value_of(text: &str, file: &str, key: &str) -> Result<String, String> {
    let found: Vec<&str> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(key))
        .collect();
    match found[..] {
        [value] => Ok(value.trim().to_string()),
        _ => Err(format!(
            "{file}: {} lines start with `{key}`, one expected",
            found.len()
        )),
    }
}

/// The kind names, in the table's order.
fn names(kinds: &[HeldKind]) -> Vec<&str> {
    kinds.iter().map(|k| k.kind.as_str()).collect()
}

/// `["a", "b"]`, a YAML flow list of quoted strings.
fn flow(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|i| format!("\"{i}\"")).collect();
    format!("[{}]", quoted.join(", "))
}

/// One webhook rule per API group, for UPDATE only, as list items at `indent`.
pub fn webhook_rules(kinds: &[HeldKind], indent: usize) -> String {
    let pad = " ".repeat(indent);
    groups(kinds)
        .iter()
        .map(|g| {
            format!(
                "{pad}- apiGroups: {}\n{pad}  apiVersions: {}\n{pad}  resources: {}\n{pad}  operations: [\"UPDATE\"]\n",
                flow(&[g.group]),
                flow(&g.versions),
                flow(&g.resources())
            )
        })
        .collect()
}

/// The window job's RBAC: `list` and `patch` on the held resources, one rule per API group.
fn rbac_rules(kinds: &[HeldKind], indent: usize) -> String {
    let pad = " ".repeat(indent);
    groups(kinds)
        .iter()
        .map(|g| {
            format!(
                "{pad}- apiGroups: {}\n{pad}  resources: {}\n{pad}  verbs: [\"list\", \"patch\"]\n",
                flow(&[g.group]),
                flow(&g.resources())
            )
        })
        .collect()
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `text` with the list under every line that is `key` alone (e.g. `rules:`) replaced by
/// `render(indent of its items)`; an error when there is none.
pub fn replace_lists(
    text: &str,
    file: &str,
    key: &str,
    render: impl Fn(usize) -> String,
) -> Result<String, String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::new();
    let mut found = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out.push_str(line);
        i += 1;
        if line.trim() != key {
            continue;
        }
        found = true;
        let indent = indent_of(line);
        while i < lines.len() {
            let next = lines[i];
            let deeper = indent_of(next) > indent
                || (indent_of(next) == indent && next.trim_start().starts_with("- "));
            if next.trim().is_empty() || !deeper {
                break;
            }
            i += 1;
        }
        out.push_str(&render(indent + 2));
    }
    if !found {
        return Err(format!("{file}: no `{key}` to generate"));
    }
    Ok(out)
}

/// `text` with the value of the one line that starts with `key` replaced.
fn replace_value(text: &str, file: &str, key: &str, value: &str) -> Result<String, String> {
    let mut found = 0;
    let out: String = text
        .split_inclusive('\n')
        .map(|line| {
            if line.trim_start().starts_with(key) {
                found += 1;
                let pad = " ".repeat(indent_of(line));
                format!("{pad}{key} {value}\n")
            } else {
                line.to_string()
            }
        })
        .collect();
    match found {
        1 => Ok(out),
        n => Err(format!(
            "{file}: {n} lines start with `{key}`, one expected"
        )),
    }
}

/// A JSON value as a CEL literal.
fn cel(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("'{k}': {}", cel(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(cel).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// A CEL map from each held resource to `value(kind)`, looked up by the request's resource, as
/// the lines of a folded YAML scalar at `indent`.
fn cel_map(kinds: &[HeldKind], indent: usize, value: impl Fn(&HeldKind) -> String) -> String {
    let pad = " ".repeat(indent);
    let entries: Vec<String> = kinds
        .iter()
        .map(|k| format!("'{}': {}", k.resource, value(k)))
        .collect();
    let last = entries.len() - 1;
    entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let open = if i == 0 { "{" } else { "" };
            let close = if i == last {
                "}[request.resource.resource]"
            } else {
                ","
            };
            format!("{pad}{open}{e}{close}\n")
        })
        .collect()
}

/// Where in `spec` a kind's control sits, as the admission policy compares spec: the member of
/// spec that holds it, and the control's key within that member when it sits one level down
/// (`""` when it is the member itself). The policy compares spec member by member; a nested
/// control's member without the control, and the control on its own.
fn spec_field(k: &HeldKind) -> Result<(&str, &str), String> {
    match &k.control[..] {
        [spec, field] if spec == "spec" => Ok((field, "")),
        [spec, field, member] if spec == "spec" => Ok((field, member)),
        other => Err(format!(
            "{}: its control {} is not a field of spec or of a member of spec, which the window job's admission policy compares",
            k.kind,
            other.join(".")
        )),
    }
}

/// The line of the chart's window job that names the resources its CronJob annotates.
const JOB_RESOURCES: &str = "{{- $resources :=";

fn window_release(text: &str, kinds: &[HeldKind]) -> Result<String, String> {
    let file = CHART_WINDOW_RELEASE;
    let groups = groups(kinds);
    let everywhere: Vec<&str> = groups
        .iter()
        .filter(|g| g.served_everywhere())
        .flat_map(|g| g.resources())
        .collect();
    if everywhere.is_empty() {
        return Err(format!(
            "{file}: no kind of a built-in API group for its CronJob to annotate"
        ));
    }
    let text = replace_value(
        text,
        file,
        JOB_RESOURCES,
        &format!("\"{}\" }}}}", everywhere.join(",")),
    )?;
    let text = replace_comment_list(&text, file, WINDOW_KINDS_ANCHOR, &window_kinds(&groups))?;
    let text = replace_lists(&text, file, "rules:", |i| rbac_rules(kinds, i))?;
    let text = replace_lists(&text, file, "resourceRules:", |i| webhook_rules(kinds, i))?;
    let mut fields = Vec::new();
    for k in kinds {
        fields.push(spec_field(k)?);
    }
    // the folded scalar of the `expression: >-` under `- name: NAME`
    let expression = |text: &str, name: &str, value: &dyn Fn(usize) -> String| {
        let anchor = format!("- name: {name}");
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let key = lines
            .iter()
            .position(|l| l.trim() == anchor)
            .map(|at| at + 1)
            .filter(|&key| lines.get(key).is_some_and(|l| l.trim() == "expression: >-"))
            .ok_or_else(|| format!("{file}: no `{anchor}` with `expression: >-`"))?;
        let indent = indent_of(lines[key]);
        let mut end = key + 1;
        while end < lines.len() && !lines[end].trim().is_empty() && indent_of(lines[end]) > indent {
            end += 1;
        }
        Ok::<String, String>(format!(
            "{}{}{}",
            lines[..=key].concat(),
            value(indent + 2),
            lines[end..].concat()
        ))
    };
    let text = expression(&text, "control", &|i| {
        cel_map(kinds, i, |k| format!("'{}'", k.control[1]))
    })?;
    let text = expression(&text, "controlMember", &|i| {
        cel_map(kinds, i, |k| {
            format!("'{}'", k.control.get(2).map_or("", String::as_str))
        })
    })?;
    let text = expression(&text, "heldControl", &|i| {
        cel_map(kinds, i, |k| format!("dyn({})", cel(&k.held)))
    })?;
    let text = expression(&text, "rememberedAnnotation", &|i| {
        cel_map(kinds, i, |k| cel_string(&k.remembered))
    })?;
    // As restage-gate remembers a control that was absent: the default, as serde_json writes it.
    let text = expression(&text, "defaultControl", &|i| {
        cel_map(kinds, i, |k| cel_string(&k.default.to_string()))
    })?;
    let text = expression(&text, "controlKeys", &|i| {
        cel_map(kinds, i, |k| {
            let keys: Vec<String> = sorted_keys(k).iter().map(|c| cel_string(&c.name)).collect();
            format!("dyn([{}])", keys.join(", "))
        })
    })?;
    let text = expression(&text, "memberKeys", &|i| {
        cel_map(kinds, i, |k| {
            let keys: Vec<String> = objects(k)
                .map(|c| {
                    let members: Vec<String> =
                        c.members.iter().map(|m| cel_string(&m.name)).collect();
                    format!("{}: [{}]", cel_string(&c.name), members.join(", "))
                })
                .collect();
            format!("dyn({{{}}})", keys.join(", "))
        })
    })?;
    let text = expression(&text, "filledMembers", &|i| {
        cel_map(kinds, i, |k| {
            let keys: Vec<String> = objects(k)
                .map(|c| {
                    let members: Vec<String> = c
                        .members
                        .iter()
                        .map(|m| {
                            format!(
                                "{}: {}",
                                cel_string(&m.name),
                                cel_string(&m.filled.to_string())
                            )
                        })
                        .collect();
                    format!("{}: {{{}}}", cel_string(&c.name), members.join(", "))
                })
                .collect();
            format!("dyn({{{}}})", keys.join(", "))
        })
    })?;
    // Helm reads `{{` as the start of a template action: CEL written there would not be CEL.
    let variables = text.split("  variables:").nth(1).unwrap_or_default();
    let variables = variables.split("  validations:").next().unwrap_or_default();
    if variables.contains("{{") {
        return Err(format!(
            "{file}: a control map of the admission policy writes `{{{{`, which Helm would read as a template action"
        ));
    }
    Ok(text)
}

/// The keys of a kind's control, members included, sorted as serde_json writes them (by bytes):
/// the admission policy writes the control's JSON in this order, as CEL cannot sort on every
/// Kubernetes it supports.
fn sorted_keys(k: &HeldKind) -> Vec<ControlKey> {
    let mut keys = k.control_keys.clone();
    keys.sort_by(|a, b| a.name.cmp(&b.name));
    for key in &mut keys {
        key.members.sort_by(|a, b| a.name.cmp(&b.name));
    }
    keys
}

/// The keys of a kind's control whose value is an object, sorted.
fn objects(k: &HeldKind) -> impl Iterator<Item = ControlKey> {
    sorted_keys(k).into_iter().filter(|c| !c.members.is_empty())
}

/// A CEL string literal.
fn cel_string(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// The header line of `window-release.yaml` after which the kinds its jobs annotate are
/// listed, a comment line per API group.
const WINDOW_KINDS_ANCHOR: &str =
    "# restage-gate.io/release=window on every held workload of these kinds:";

/// The comment lines of `window-release.yaml` that say which job annotates which kinds.
fn window_kinds(groups: &[Group]) -> Vec<String> {
    groups
        .iter()
        .map(|g| {
            let kinds = g.kinds.iter().map(|k| (*k).clone()).collect::<Vec<_>>();
            let kinds = list("kinds-and", &kinds).unwrap_or_default();
            match g.window_release_file() {
                None => format!("#   {kinds} ({}): by this CronJob", g.group),
                Some(file) => format!(
                    "#   {kinds} ({}): by the CronJob of {file}, applied where the group is served",
                    g.group
                ),
            }
        })
        .collect()
}

/// `text` with the comment lines indented under the line `anchor` (`#   …`) replaced by `lines`.
fn replace_comment_list(
    text: &str,
    file: &str,
    anchor: &str,
    lines: &[String],
) -> Result<String, String> {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let at = all
        .iter()
        .position(|l| l.trim_end() == anchor)
        .ok_or_else(|| format!("{file}: no header line `{anchor}`"))?;
    let mut end = at + 1;
    while end < all.len() && all[end].starts_with("#   ") {
        end += 1;
    }
    let listed: String = lines.iter().map(|l| format!("{l}\n")).collect();
    Ok(format!(
        "{}{listed}{}",
        all[..=at].concat(),
        all[end..].concat()
    ))
}

/// The longest name a CronJob may have (its Jobs' names add a suffix to it).
const CRONJOB_NAME_MAX: usize = 52;

/// The chart's template of the window job for a group not every cluster serves: the CronJob of
/// the chart's window job (`restage-gate.windowJob`), named for the group and annotating the
/// group's resources only, rendered only where the cluster serves the group. kubectl fails on a
/// resource type the cluster does not serve, so the group has its own job; the service account,
/// its permissions and the admission policy stay in `window-release.yaml`, which names every
/// group.
pub fn window_release_of_group(g: &Group) -> Result<String, String> {
    let own = g
        .window_release_file()
        .ok_or_else(|| format!("{}: every cluster serves it", g.group))?;
    let name = format!("restage-gate-window-release-{}", g.group.replace('.', "-"));
    if name.len() > CRONJOB_NAME_MAX {
        return Err(format!(
            "{own}: its CronJob's name {name} is longer than {CRONJOB_NAME_MAX} characters"
        ));
    }
    let kinds = g.kinds.iter().map(|k| (*k).clone()).collect::<Vec<_>>();
    let kinds = list("kinds-and", &kinds)?;
    // One version is asked for: any of the group's is served where its CRD is installed.
    let version = g.versions.first().ok_or("a group without a version")?;
    Ok(format!(
        "{GENERATED_BY}: the window job of a group of custom resources. */ -}}}}
{{{{- if and (include \"restage-gate.windowRelease\" .) (.Capabilities.APIVersions.Has \"{group}/{version}\") }}}}
# restage-gate: maintenance windows that act, for {kinds} of the API group {group}.
# kubectl fails on a resource type the cluster does not serve, so a group of custom resources
# has its own job, rendered from charts/restage-gate only where the cluster serves the group:
# apply this file after window-release.yaml (its service account, permissions and admission
# policy cover {group} too), and only where the cluster serves {group}. See
# docs/install.md (\"Maintenance windows that act\").
#
#   kubectl apply -f {own}
{{{{ include \"restage-gate.windowJob\" (dict \"root\" . \"name\" \"{name}\" \"resources\" \"{resources}\") }}}}
{{{{- end }}}}
",
        group = g.group,
        resources = g.resources().join(","),
    ))
}

/// `artifacthub-pkg.yml` from the generated `metadata.yml`, keeping its `createdAt`.
fn artifacthub(root: &Path, metadata: &str, now: &str) -> Result<String, String> {
    let meta = crate::metadata::read_yaml(metadata)?;
    let version = meta["annotations"][crate::metadata::VERSION]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let created = crate::versions::existing_created_at(now, &version).ok_or(
        "artifacthub-pkg.yml: no createdAt for this version; run `make artifacthub-pkg.yml`",
    )?;
    let questions = repository::read(root, "questions-ui.yml")?;
    crate::versions::artifacthub_pkg(&meta, &questions, &created)
}

/// `a, b and c`.
fn joined(items: &[String], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., end] => format!("{} {last} {end}", rest.join(", ")),
    }
}

/// The list of kinds a `<!-- kinds:FORM -->` marker writes:
/// - `kinds-and`: StatefulSets, DaemonSets and Deployments; `kinds-or` with "or"
/// - `remembered-or`: each remembered annotation with its kinds: `…-update-strategy`
///   (StatefulSet, DaemonSet) or `…-paused` (Deployment)
/// - `kind-or`: StatefulSet, DaemonSet or Deployment
/// - `api-kinds-and`: `apps/v1` StatefulSets, DaemonSets and Deployments (per API group)
/// - `resources-of-groups`: `statefulsets`, `daemonsets` and `deployments` of the group `apps`
pub fn list(form: &str, kinds: &[HeldKind]) -> Result<String, String> {
    let plural =
        |ks: &[&HeldKind]| -> Vec<String> { ks.iter().map(|k| format!("{}s", k.kind)).collect() };
    let all: Vec<&HeldKind> = kinds.iter().collect();
    Ok(match form {
        "kinds-and" => joined(&plural(&all), "and"),
        "kinds-or" => joined(&plural(&all), "or"),
        "remembered-or" => {
            let mut by: Vec<(&str, Vec<&str>)> = Vec::new();
            for k in kinds {
                match by.iter_mut().find(|(a, _)| *a == k.remembered) {
                    Some((_, ks)) => ks.push(&k.kind),
                    None => by.push((&k.remembered, vec![&k.kind])),
                }
            }
            let per: Vec<String> = by
                .iter()
                .map(|(a, ks)| format!("`{a}` ({})", ks.join(", ")))
                .collect();
            joined(&per, "or")
        }
        "kind-or" => joined(
            &kinds.iter().map(|k| k.kind.clone()).collect::<Vec<_>>(),
            "or",
        ),
        "api-kinds-and" => {
            let per: Vec<String> = groups(kinds)
                .iter()
                .map(|g| {
                    format!(
                        "`{}/{}` {}",
                        g.group,
                        g.versions.join("`, `"),
                        joined(&plural(&g.kinds), "and")
                    )
                })
                .collect();
            per.join("; ")
        }
        "resources-of-groups" => {
            let per: Vec<String> = groups(kinds)
                .iter()
                .map(|g| {
                    let resources: Vec<String> =
                        g.resources().iter().map(|r| format!("`{r}`")).collect();
                    format!("{} of the group `{}`", joined(&resources, "and"), g.group)
                })
                .collect();
            joined(&per, "and")
        }
        other => return Err(format!("`<!-- kinds:{other} -->`: no such list of kinds")),
    })
}

const LIST_END: &str = "<!-- /kinds -->";

/// `text` with every `<!-- kinds:FORM -->…<!-- /kinds -->` list written by [`list`].
pub fn prose(text: &str, file: &str, kinds: &[HeldKind]) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("<!-- kinds:") {
        let open_end = rest[at..]
            .find("-->")
            .ok_or_else(|| format!("{file}: an unclosed `<!-- kinds:` marker"))?
            + at
            + 3;
        let form = rest[at + "<!-- kinds:".len()..open_end - 3].trim();
        let close = rest[open_end..]
            .find(LIST_END)
            .ok_or_else(|| format!("{file}: `<!-- kinds:{form} -->` without {LIST_END}"))?
            + open_end;
        out.push_str(&rest[..open_end]);
        out.push_str(&list(form, kinds).map_err(|e| format!("{file}: {e}"))?);
        out.push_str(LIST_END);
        rest = &rest[close + LIST_END.len()..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `if` the cluster serves the group, `command` on its resources: a kind whose custom resource
/// is not installed is skipped instead of failing the procedure.
fn per_group(g: &Group, command: &str) -> String {
    format!(
        "if [ -n \"$(kubectl api-resources --api-group={} -o name)\" ]; then {command}; fi",
        g.group,
        command = command.replace("RESOURCES", &g.resources().join(","))
    )
}

/// `command` on the resources of every group (`RESOURCES` in it), each only where the cluster
/// serves the group: one command, continued over a line per group, so a step is one command
/// however many groups there are.
fn each_group(kinds: &[HeldKind], command: &str) -> String {
    let lines: Vec<String> = groups(kinds)
        .iter()
        .map(|g| per_group(g, command))
        .collect();
    lines.join("; \\\n") + "\n"
}

fn fence(language: &str, body: &str) -> String {
    format!("```{language}\n{body}```\n")
}

/// The `-l` selector of held workloads.
fn held_selector(markers: &Markers) -> String {
    format!("{}=true", markers.held_label)
}

/// A JSONPath to an annotation, its dots escaped as kubectl wants them.
fn annotation_path(annotation: &str) -> String {
    format!(".metadata.annotations.{}", annotation.replace('.', "\\."))
}

/// The console block that lists held workloads, with `output` (` -o …`) after the selector.
pub fn held_list(kinds: &[HeldKind], markers: &Markers, output: &str) -> String {
    fence(
        "console",
        &each_group(
            kinds,
            &format!(
                "kubectl get RESOURCES -A -l {}{output}",
                held_selector(markers)
            ),
        ),
    )
}

/// The README's "Find held workloads" command: the held workloads of every kind, one row each.
fn held_table(kinds: &[HeldKind], markers: &Markers) -> String {
    let columns = [
        "KIND:.kind".to_string(),
        "NAMESPACE:.metadata.namespace".into(),
        "NAME:.metadata.name".into(),
        format!("SINCE:{}", annotation_path(&markers.held_since)),
        format!("PENDING:{}", annotation_path(&markers.pending)),
    ];
    held_list(
        kinds,
        markers,
        &format!(" -o custom-columns='{}'", columns.join(",")),
    )
}

/// The README's "Apply held changes now" commands: the release annotation, which works for every
/// kind, then each kind's own command, from the kind.
pub fn apply_now_block(kinds: &[HeldKind], markers: &Markers) -> String {
    let singular: Vec<String> = kinds.iter().map(|k| k.kind.to_lowercase()).collect();
    let others: Vec<String> = singular[1..].iter().map(|k| format!("{k}/")).collect();
    let annotate = format!(
        "kubectl annotate {}/NAME -n NAMESPACE {}=now --overwrite",
        singular[0], markers.release
    );
    let mut lines = vec![if others.is_empty() {
        annotate
    } else {
        format!("{annotate}   # or {}", others.join(", "))
    }];
    let width = kinds.iter().map(|k| k.apply_now.len()).max().unwrap_or(0);
    for k in kinds {
        lines.push(format!("{:width$}   # {}", k.apply_now, k.kind));
    }
    let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
    fence("console", &body)
}

/// README.md's generated command blocks.
fn readme_blocks(text: &str, kinds: &[HeldKind], markers: &Markers) -> Result<String, String> {
    let file = "README.md";
    let text = replace_block(text, file, "held-workloads", &held_table(kinds, markers))?;
    replace_block(&text, file, "apply-now", &apply_now_block(kinds, markers))
}

/// The command that removes the window jobs: their permission first, then `window-release.yaml`
/// and the manifest of each group not every cluster serves, whichever were applied.
fn window_release_delete(kinds: &[HeldKind]) -> String {
    let mut files = vec![
        WINDOW_RELEASE_BINDING.to_string(),
        "window-release.yaml".to_string(),
    ];
    files.extend(groups(kinds).iter().filter_map(|g| g.window_release_file()));
    let files: Vec<String> = files.iter().map(|f| format!("-f {f}")).collect();
    format!("kubectl delete {} --ignore-not-found\n", files.join(" "))
}

/// The generated command blocks of docs/uninstall.md, by marker name.
pub fn uninstall_blocks(kinds: &[HeldKind], markers: &Markers) -> Vec<(&'static str, String)> {
    let held = held_selector(markers);
    let release = each_group(
        kinds,
        &format!(
            "kubectl annotate RESOURCES -A -l {held} {}=now --overwrite",
            markers.release
        ),
    );
    let check = each_group(kinds, &format!("kubectl get RESOURCES -A -l {held}"));
    let restore = format!(
        "{}{}",
        restore_program(kinds, markers),
        each_group(
            kinds,
            &format!("kubectl get RESOURCES -A -l {held} -o json | jq -r \"$restore\" | sh")
        )
    );
    vec![
        ("uninstall-job", fence("sh", &window_release_delete(kinds))),
        ("uninstall-release", fence("sh", &release)),
        ("uninstall-restore", fence("sh", &restore)),
        ("uninstall-check", fence("sh", &check)),
    ]
}

/// The jq program of the restore step, in `$restore`: for each listed object, the merge patch
/// that writes back its kind's remembered control (the API default when missing or not JSON)
/// and removes every marker (`markers`: every annotation and the label restage-gate writes).
fn restore_program(kinds: &[HeldKind], markers: &Markers) -> String {
    let entries: Vec<String> = kinds
        .iter()
        .map(|k| {
            let path: Vec<String> = k.control.iter().map(|p| format!("\"{p}\"")).collect();
            format!(
                "     \"{}/{}\": {{resource: \"{}\", control: [{}], remembered: \"{}\", default: {}}}",
                k.group,
                k.kind,
                k.resource,
                path.join(", "),
                k.remembered,
                spaced(&k.default)
            )
        })
        .collect();
    let mut annotations: Vec<&str> = kinds.iter().map(|k| k.remembered.as_str()).collect();
    annotations.dedup();
    annotations.extend(markers.annotations.iter().map(String::as_str));
    let nulls: Vec<String> = annotations
        .iter()
        .map(|m| format!("\"{m}\": null"))
        .collect();
    let nulls = nulls.join(&format!(",\n{}", " ".repeat(32)));
    format!(
        "restore='
  {{
{}
  }} as $kinds
  | .items[]
  | $kinds[\"\\(.apiVersion | split(\"/\") | .[0])/\\(.kind)\"] as $k
  | ((.metadata.annotations[$k.remembered] // \"null\") | try fromjson catch null) as $remembered
  | ({{metadata: {{labels: {{\"{held}\": null}},
                 annotations: {{{nulls}}}}}}}
     | setpath($k.control; if $remembered == null then $k.default else $remembered end)) as $patch
  | @sh \"kubectl patch \\($k.resource) \\(.metadata.name) -n \\(.metadata.namespace) --type merge -p \\($patch | tojson)\"'
",
        entries.join(",\n"),
        held = markers.held_label,
    )
}

fn uninstall(text: &str, kinds: &[HeldKind], markers: &Markers) -> Result<String, String> {
    let mut text = text.to_string();
    for (name, block) in uninstall_blocks(kinds, markers) {
        text = replace_block(&text, "docs/uninstall.md", name, &block)?;
    }
    Ok(text)
}

/// `text` with the block between the lines `<!-- NAME:begin -->` and `<!-- NAME:end -->`
/// replaced, indented as the markers are (a block inside a list item).
fn replace_block(text: &str, file: &str, name: &str, block: &str) -> Result<String, String> {
    let begin = format!("<!-- {name}:begin -->");
    let end = format!("<!-- {name}:end -->");
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let start = lines
        .iter()
        .position(|l| l.trim() == begin)
        .ok_or_else(|| format!("{file}: no {begin} marker"))?;
    let stop = lines[start..]
        .iter()
        .position(|l| l.trim() == end)
        .ok_or_else(|| format!("{file}: no {end} marker after {begin}"))?
        + start;
    let pad = " ".repeat(indent_of(lines[start]));
    let body: String = block
        .split_inclusive('\n')
        .map(|l| {
            if l.trim().is_empty() {
                l.to_string()
            } else {
                format!("{pad}{l}")
            }
        })
        .collect();
    Ok(format!(
        "{}{body}{}",
        lines[..=start].concat(),
        lines[stop..].concat()
    ))
}

/// A JSON value as the docs write it: `{"type": "OnDelete"}`.
pub fn spaced(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let members: Vec<String> = map
                .iter()
                .map(|(k, v)| format!("{}: {}", Value::from(k.as_str()), spaced(v)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(spaced).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

/// What the README's table of kinds says a kind is held with: `paused: true`.
pub fn held_with(k: &HeldKind) -> String {
    // the control's path below spec, at whatever depth: `paused`, `updateStrategy.paused`
    let field = k.control.get(1..).unwrap_or_default().join(".");
    format!("`{field}: {}`", spaced(&k.held))
}

/// The design notes' table of held kinds: how each is held and released, and the control the
/// API server gives it when absent (the default a release restores when nothing is remembered).
fn design_table(kinds: &[HeldKind]) -> String {
    let mut out = String::from("| kind | hold | release | API default |\n|---|---|---|---|\n");
    for k in kinds {
        out.push_str(&format!(
            "| {} | {} | restore `{}` | `{}` |\n",
            k.kind,
            held_with(k),
            k.remembered,
            spaced(&k.default)
        ));
    }
    out
}

/// Where the README's table of kinds (the one headed `| kind | held with |`) disagrees with
/// the kinds table: a row per kind, in the table's order, each held as the kind holds it.
pub fn kind_table_problems(readme: &str, kinds: &[HeldKind]) -> Vec<String> {
    let mut lines = readme
        .lines()
        .skip_while(|l| !l.starts_with("| kind | held with |"));
    if lines.next().is_none() {
        return vec!["README.md: no table of kinds (`| kind | held with | …`)".into()];
    }
    let rows: Vec<Vec<String>> = lines
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    let found: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    if found != names(kinds) {
        out.push(format!(
            "README.md: the table of kinds has rows {found:?}, the kinds table {:?}: a row per kind, in its order",
            names(kinds)
        ));
    }
    for k in kinds {
        let want = held_with(k);
        if let Some(row) = rows.iter().find(|r| r[0] == k.kind) {
            if row.get(1) != Some(&want) {
                out.push(format!(
                    "README.md: the table of kinds says {} is held with {}, the kind holds it with {want}",
                    k.kind,
                    row.get(1).map_or("nothing", String::as_str)
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A made-up kind's strategy: `rollingUpdate` takes `maxSurge` (at most 1), nothing else.
    fn accepts(control: &Value) -> bool {
        let rolling = control["rollingUpdate"].as_object();
        rolling.is_some_and(|r| {
            r.iter()
                .all(|(k, v)| k == "maxSurge" && v.as_i64().is_some_and(|n| n <= 1))
        })
    }

    #[test]
    fn a_controls_keys_are_its_defaults_and_the_members_its_kind_accepts_sorted() {
        let default = json!({"type": "Rolling", "rollingUpdate": {"maxSurge": 1}});
        let keys = control_keys(&default, accepts);
        let names: Vec<&str> = keys.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["rollingUpdate", "type"]);
        assert_eq!(
            keys[0].members,
            [ControlMember {
                name: "maxSurge".into(),
                filled: json!(1)
            }],
            "the default's own value filled in; members the kind refuses left out"
        );
        assert!(keys[1].members.is_empty());
        let more = |c: &Value| c["rollingUpdate"].as_object().is_some_and(|r| r.len() <= 2);
        let names: Vec<String> = control_keys(&default, more)[0]
            .members
            .iter()
            .map(|m| m.name.clone())
            .collect();
        assert_eq!(names, ["maxSurge", "maxUnavailable", "partition"]);
        assert_eq!(control_keys(&json!(false), accepts), Vec::new());
    }

    #[test]
    fn only_the_window_job_manifests_it_wrote_count_as_generated() {
        let dir = std::env::temp_dir().join(format!("restage-gate-kinds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch directory");
        let files = [
            (
                "window-release-example.test.yaml",
                format!("{GENERATED_BY}, …\n"),
            ),
            (
                "window-release-prod.yaml",
                "# an operator's own job\n".to_string(),
            ),
            ("window-release.yaml", format!("{GENERATED_BY}\n")),
        ];
        for (name, text) in &files {
            std::fs::write(dir.join(name), text).expect("write");
        }
        let found = window_release_group_files(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            found,
            Ok(vec!["window-release-example.test.yaml".to_string()])
        );
    }
}
