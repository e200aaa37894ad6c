//! The policies the webhook serves, read from policy-server's own `policies.yml` and made ready
//! as policy-server makes them at start: each module compiled once, each policy's settings
//! checked by its module, and the first refusal stops the start.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use restage_gate_e2e::host::Module;
use restage_gate_evaluation::guest::Guest;
use serde::Deserialize;
use serde_json::{Map, Value};

/// How a policy's answers reach the API server: `protect` as they are, `monitor` always
/// allowed and unchanged, the policy's own answer only logged
/// (`crates/policy-evaluator/src/admission_response_handler/policy_mode.rs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PolicyMode {
    #[default]
    Protect,
    Monitor,
}

impl PolicyMode {
    pub fn name(self) -> &'static str {
        match self {
            PolicyMode::Protect => "protect",
            PolicyMode::Monitor => "monitor",
        }
    }
}

/// One policy of `policies.yml`, with the fields of policy-server's
/// `PolicyOrPolicyGroup::Policy` (`crates/policy-server/src/config.rs`). Fields it does not
/// know are ignored there too.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub module: String,
    #[serde(default)]
    pub policy_mode: PolicyMode,
    /// Absent means false, as policy-server reads it: a validating webhook.
    pub allowed_to_mutate: Option<bool>,
    pub settings: Option<Map<String, Value>>,
    /// Replaces the status message of every refusal (the policy's own becomes a cause).
    pub message: Option<String>,
    /// restage-gate asks the host for nothing, so the resources and capabilities a policy may
    /// use through host calls change nothing here; they are read so that a file the Kubewarden
    /// controller wrote loads as it is.
    #[serde(default)]
    pub context_aware_resources: Vec<Value>,
    #[serde(default)]
    pub host_capabilities: Vec<String>,
    pub timeout_eval_seconds: Option<u64>,
}

/// A policy ready to answer: its compiled module (shared by every policy that names the same
/// file) and what `policies.yml` says about it.
#[derive(Debug)]
pub struct Policy {
    pub id: String,
    pub module: Module,
    pub settings: Value,
    pub mode: PolicyMode,
    pub allowed_to_mutate: bool,
    pub message: Option<String>,
}

/// Reads `policies.yml`: a map from policy id (the `<policy-id>` of `/validate/<policy-id>`) to
/// a policy. Policy groups and ids with a `/` are refused, the latter as policy-server does.
pub fn parse(text: &str) -> Result<BTreeMap<String, Entry>, String> {
    let raw: BTreeMap<String, serde_yaml::Value> = serde_yaml::from_str(text)
        .map_err(|e| format!("not a map of policy ids to policies: {e}"))?;
    let mut entries = BTreeMap::new();
    for (id, value) in raw {
        if id.contains('/') {
            return Err(format!("policy name '{id}' contains a '/' character"));
        }
        let is_group = value.get("module").is_none()
            && (value.get("policies").is_some() || value.get("expression").is_some());
        if is_group {
            return Err(format!(
                "policy {id:?}: policy groups (`policies` and `expression`) are not supported; \
                 list restage-gate as a policy of its own, with `module`"
            ));
        }
        let entry: Entry =
            serde_yaml::from_value(value).map_err(|e| format!("policy {id:?}: {e}"))?;
        entries.insert(id, entry);
    }
    Ok(entries)
}

/// Where `module` is on this machine: a path, or a `file://` URL. Other sources
/// (`registry://`, `https://`) are policy-server's downloads, which this server does not do.
pub fn module_path(id: &str, module: &str) -> Result<PathBuf, String> {
    if let Some(path) = module.strip_prefix("file://") {
        return Ok(PathBuf::from(path));
    }
    if let Some((scheme, _)) = module.split_once("://") {
        return Err(format!(
            "policy {id:?}: module: {module:?}: {scheme}:// modules are not supported; \
             fetch the module first (`kwctl pull`, `make pull`, or build it with \
             `make policy.wasm`) and give its path or a file:// URL"
        ));
    }
    Ok(PathBuf::from(module))
}

/// Every policy of the file at `path`, compiled and with its settings accepted by its module.
/// Without policy-server's `--continue-on-errors` the first policy that cannot be made ready
/// stops the start (`crates/policy-server/src/evaluation/evaluation_environment.rs`,
/// `build_evaluation_environment`); so it does here, with the policy named.
pub fn load(path: &Path) -> Result<BTreeMap<String, Arc<Policy>>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let entries = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    // policy-server compiles a module once however many policies use it (it keys them by
    // digest); the path is key enough for files on this machine.
    let mut compiled: HashMap<PathBuf, Module> = HashMap::new();
    let mut policies = BTreeMap::new();
    for (id, entry) in entries {
        let file = module_path(&id, &entry.module)?;
        let module = match compiled.get(&file) {
            Some(module) => module.clone(),
            None => {
                let module =
                    Module::load(&file).map_err(|e| format!("policy {id:?}: module: {e}"))?;
                compiled.insert(file, module.clone());
                module
            }
        };
        let settings = Value::Object(entry.settings.unwrap_or_default());
        check_settings(&id, &module, &settings)?;
        if let Some(seconds) = entry.timeout_eval_seconds {
            eprintln!(
                "restage-gate-webhook: policy {id:?}: timeoutEvalSeconds: {seconds}: not \
                 enforced here (the module runs without an execution deadline)"
            );
        }
        let policy = Policy {
            id: id.clone(),
            module,
            settings,
            mode: entry.policy_mode,
            allowed_to_mutate: entry.allowed_to_mutate.unwrap_or(false),
            message: entry.message,
        };
        policies.insert(id, Arc::new(policy));
    }
    Ok(policies)
}

/// `validate_settings` on a fresh instance; a refusal names the policy, the settings and the
/// module's message (which names the field), in policy-server's words.
fn check_settings(id: &str, module: &Module, settings: &Value) -> Result<(), String> {
    match module.validate_settings(settings) {
        Ok(None) => Ok(()),
        Ok(Some(message)) => Err(format!(
            "policy {id:?}: settings {settings}: Policy settings are invalid: {message}"
        )),
        Err(e) => Err(format!(
            "policy {id:?}: settings {settings}: cannot validate them: {e}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_policy_reads_with_policy_servers_defaults() {
        let entries = parse("restage-gate:\n  module: /policies/policy.wasm\n").unwrap();
        let entry = &entries["restage-gate"];
        assert_eq!(entry.policy_mode, PolicyMode::Protect);
        assert_eq!(entry.allowed_to_mutate, None);
        assert_eq!(entry.settings, None);
    }

    #[test]
    fn every_field_of_a_policy_reads() {
        let text = "
guard:
  module: file:///policies/policy.wasm
  policyMode: monitor
  allowedToMutate: false
  message: held by the platform team
  contextAwareResources:
    - apiVersion: v1
      kind: Namespace
  hostCapabilities: []
  timeoutEvalSeconds: 2
  settings:
    mode: reject
    maintenanceWindows:
      - days: [Sat]
        start: \"02:00\"
        end: \"04:00\"
";
        let entry = &parse(text).unwrap()["guard"];
        assert_eq!(entry.policy_mode, PolicyMode::Monitor);
        assert_eq!(entry.allowed_to_mutate, Some(false));
        assert_eq!(entry.message.as_deref(), Some("held by the platform team"));
        assert_eq!(
            Value::Object(entry.settings.clone().unwrap()),
            json!({"mode": "reject", "maintenanceWindows":
                [{"days": ["Sat"], "start": "02:00", "end": "04:00"}]})
        );
        assert_eq!(
            module_path("guard", &entry.module).unwrap(),
            PathBuf::from("/policies/policy.wasm")
        );
    }

    #[test]
    fn a_mode_other_than_protect_or_monitor_is_refused_naming_the_policy() {
        let error = parse("guard:\n  module: p.wasm\n  policyMode: enforce\n").unwrap_err();
        assert!(error.starts_with("policy \"guard\": "), "{error}");
        assert!(error.contains("enforce"), "{error}");
    }

    #[test]
    fn a_registry_module_is_refused_naming_the_field_the_value_and_what_to_do() {
        let module = "registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0";
        let error = module_path("restage-gate", module).unwrap_err();
        assert!(
            error.starts_with(&format!("policy \"restage-gate\": module: {module:?}")),
            "{error}"
        );
        assert!(error.contains("file:// URL"), "{error}");
    }

    #[test]
    fn groups_and_ids_with_a_slash_are_refused() {
        let group =
            "g:\n  expression: a()\n  message: no\n  policies:\n    a:\n      module: p.wasm\n";
        assert!(parse(group).unwrap_err().contains("policy groups"));
        let slash = "a/b:\n  module: p.wasm\n";
        assert_eq!(
            parse(slash).unwrap_err(),
            "policy name 'a/b' contains a '/' character"
        );
    }
}
