//! What counts as a binding artefact: everything a servicebinding.io projector (or the older
//! VMware implementation) writes into a pod template (DESIGN.md §1).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

/// Volumes projected by servicebinding/runtime: `servicebinding-<ServiceBinding uid>`.
pub const SERVICEBINDING_VOLUME_PREFIX: &str = "servicebinding-";
/// Template annotations written by servicebinding/runtime (`secret-`, `type-`, `provider-<uid>`).
pub const PROJECTOR_ANNOTATION_PREFIX: &str = "projector.servicebinding.io/";
/// The secret-name annotation: its value names the binding secret.
pub const PROJECTOR_SECRET_ANNOTATION_PREFIX: &str = "projector.servicebinding.io/secret-";
/// Volumes of the VMware implementation: `binding-<40 hex digits>`.
pub const VMWARE_VOLUME_PREFIX: &str = "binding-";
/// Annotations of the VMware implementation.
pub const VMWARE_ANNOTATION_PREFIX: &str = "internal.bindings.labs.vmware.com/projection";
/// Appended by the projector when a container lacks it; unbinding never removes it.
pub const SERVICE_BINDING_ROOT: &str = "SERVICE_BINDING_ROOT";

/// The built-in recognisers plus the prefixes an operator adds in the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArtefactRules {
    pub extra_volume_prefixes: Vec<String>,
    pub extra_annotation_prefixes: Vec<String>,
}

impl ArtefactRules {
    pub fn is_binding_volume(&self, name: &str) -> bool {
        name.starts_with(SERVICEBINDING_VOLUME_PREFIX)
            || is_vmware_volume(name)
            || self
                .extra_volume_prefixes
                .iter()
                .any(|p| name.starts_with(p.as_str()))
    }

    pub fn is_binding_annotation(&self, key: &str) -> bool {
        key.starts_with(PROJECTOR_ANNOTATION_PREFIX)
            || key.starts_with(VMWARE_ANNOTATION_PREFIX)
            || self
                .extra_annotation_prefixes
                .iter()
                .any(|p| key.starts_with(p.as_str()))
    }
}

/// `binding-` followed by exactly 40 lowercase hex digits: a plain `binding-cache` volume of the
/// app's own must not count.
fn is_vmware_volume(name: &str) -> bool {
    name.strip_prefix(VMWARE_VOLUME_PREFIX).is_some_and(|rest| {
        rest.len() == 40 && rest.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The recognisers applied to one pair of templates. Env vars that read a binding secret are
/// artefacts only when the secret is named by a projector annotation in either template, so the
/// set is built from old ∪ new: a wipe removes the annotation and the env var together.
#[derive(Debug)]
pub struct Artefacts<'a> {
    rules: &'a ArtefactRules,
    /// A BTreeSet: a HashSet would seed its hasher from WASI randomness on every request.
    secrets: BTreeSet<&'a str>,
}

impl<'a> Artefacts<'a> {
    pub fn for_templates(rules: &'a ArtefactRules, templates: &[&'a Value]) -> Self {
        let secrets = templates
            .iter()
            .filter_map(|t| at(t, &["metadata", "annotations"])?.as_object())
            .flat_map(|annotations| annotations.iter())
            .filter(|(key, _)| key.starts_with(PROJECTOR_SECRET_ANNOTATION_PREFIX))
            .filter_map(|(_, value)| value.as_str())
            .collect();
        Artefacts { rules, secrets }
    }

    pub fn is_annotation(&self, key: &str) -> bool {
        self.rules.is_binding_annotation(key)
    }

    /// A pod volume (`spec.volumes[*]`) projected for a binding.
    pub fn is_volume(&self, volume: &Value) -> bool {
        name_of(volume).is_some_and(|n| self.rules.is_binding_volume(n))
    }

    /// A container volumeMount of a binding volume.
    pub fn is_mount(&self, mount: &Value) -> bool {
        self.is_volume(mount)
    }

    /// `SERVICE_BINDING_ROOT`, or an env var mapped from a binding secret or a projector annotation.
    pub fn is_env(&self, env: &Value) -> bool {
        if name_of(env) == Some(SERVICE_BINDING_ROOT) {
            return true;
        }
        let Some(from) = env.get("valueFrom") else {
            return false;
        };
        let secret = at(from, &["secretKeyRef", "name"])
            .and_then(Value::as_str)
            .is_some_and(|s| self.secrets.contains(s));
        let field = at(from, &["fieldRef", "fieldPath"])
            .and_then(Value::as_str)
            .and_then(annotation_in_field_path)
            .is_some_and(|key| self.is_annotation(key));
        secret || field
    }

    /// Whether a template carries any binding artefact at all.
    pub fn present_in(&self, template: &Value) -> bool {
        let annotations = at(template, &["metadata", "annotations"])
            .and_then(Value::as_object)
            .is_some_and(|a| a.keys().any(|k| self.is_annotation(k)));
        annotations
            || items(at(template, &["spec", "volumes"])).any(|v| self.is_volume(v))
            || containers(template).any(|c| {
                items(c.get("env")).any(|e| self.is_env(e))
                    || items(c.get("volumeMounts")).any(|m| self.is_mount(m))
            })
    }

    /// The bindings projected into a template, by binding name: the last segment of the path
    /// the first container (init containers first) mounts the binding volume at, or the volume
    /// name when no container mounts it.
    pub fn bindings(&self, template: &'a Value) -> BTreeMap<String, &'a Value> {
        let volumes: Vec<(&str, &Value)> = items(at(template, &["spec", "volumes"]))
            .filter(|v| self.is_volume(v))
            .filter_map(|v| Some((name_of(v)?, v)))
            .collect();
        let mut mounted_as: BTreeMap<&str, Option<&str>> =
            volumes.iter().map(|(name, _)| (*name, None)).collect();
        // The projector mounts every binding into every container: once each volume has a
        // name, the remaining containers repeat it.
        let mut unnamed = mounted_as.len();
        for mount in containers(template).flat_map(|c| items(c.get("volumeMounts"))) {
            if unnamed == 0 {
                break;
            }
            let Some(slot @ None) = name_of(mount).and_then(|v| mounted_as.get_mut(v)) else {
                continue;
            };
            if let Some(name) = last_segment(mount) {
                *slot = Some(name);
                unnamed -= 1;
            }
        }
        volumes
            .into_iter()
            .map(|(volume, v)| {
                let binding = mounted_as.get(volume).copied().flatten().unwrap_or(volume);
                (binding.to_string(), v)
            })
            .collect()
    }
}

/// `/bindings/orders-db/` → `orders-db`.
fn last_segment(mount: &Value) -> Option<&str> {
    let path = mount.get("mountPath")?.as_str()?.trim_end_matches('/');
    path.rsplit('/').next().filter(|n| !n.is_empty())
}

/// The value at a path of object keys. `Value::pointer` would allocate for every segment, on
/// the hot path of every request.
pub fn at<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// `metadata.annotations['key']` → `key`, the only form the projector writes.
fn annotation_in_field_path(path: &str) -> Option<&str> {
    path.strip_prefix("metadata.annotations['")?
        .strip_suffix("']")
}

fn name_of(v: &Value) -> Option<&str> {
    v.get("name")?.as_str()
}

/// The elements of a JSON list; anything else (absent, null, garbage) has none.
pub fn items(v: Option<&Value>) -> std::slice::Iter<'_, Value> {
    match v {
        Some(Value::Array(list)) => list.iter(),
        _ => [].iter(),
    }
}

/// Containers and init containers: the projector binds both.
pub fn containers(template: &Value) -> impl Iterator<Item = &Value> {
    items(at(template, &["spec", "initContainers"]))
        .chain(items(at(template, &["spec", "containers"])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules() -> ArtefactRules {
        ArtefactRules {
            extra_volume_prefixes: vec!["acme-binding-".into()],
            extra_annotation_prefixes: vec!["bindings.acme.example/".into()],
        }
    }

    #[test]
    fn binding_volumes_are_recognised_by_name() {
        let cases = [
            ("servicebinding-3f9c2b7e-1d4a-4e8b-9c6f-0a1b2c3d4e5f", true),
            ("binding-0123456789abcdef0123456789abcdef01234567", true),
            ("acme-binding-orders", true),
            ("binding-cache", false),
            ("binding-0123456789ABCDEF0123456789ABCDEF01234567", false),
            ("binding-0123456789abcdef0123456789abcdef0123456", false),
            ("data", false),
            ("my-servicebinding-x", false),
        ];
        for (name, want) in cases {
            assert_eq!(rules().is_binding_volume(name), want, "{name}");
        }
    }

    #[test]
    fn binding_annotations_are_recognised_by_prefix() {
        let cases = [
            ("projector.servicebinding.io/secret-abc", true),
            ("projector.servicebinding.io/type-abc", true),
            ("projector.servicebinding.io/mapping-abc", true),
            ("internal.bindings.labs.vmware.com/projection-abc", true),
            ("bindings.acme.example/orders", true),
            ("korifi.cloudfoundry.org/version", false),
            ("kubectl.kubernetes.io/restartedAt", false),
        ];
        for (key, want) in cases {
            assert_eq!(rules().is_binding_annotation(key), want, "{key}");
        }
    }

    #[test]
    fn env_vars_mapped_from_bindings_are_artefacts() {
        let template = json!({"metadata": {"annotations": {
            "projector.servicebinding.io/secret-u1": "orders-secret"}}});
        let rules = rules();
        let artefacts = Artefacts::for_templates(&rules, &[&template]);
        let cases = [
            (
                json!({"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}),
                true,
            ),
            (
                json!({"name": "DB_URL", "valueFrom": {"secretKeyRef": {"name": "orders-secret", "key": "url"}}}),
                true,
            ),
            (
                json!({"name": "DB_TYPE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['projector.servicebinding.io/type-u1']"}}}),
                true,
            ),
            (
                json!({"name": "GREETING", "valueFrom": {"secretKeyRef": {"name": "app-env", "key": "GREETING"}}}),
                false,
            ),
            (
                json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
                false,
            ),
            (
                json!({"name": "ZONE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['topology.kubernetes.io/zone']"}}}),
                false,
            ),
            (json!({"name": "PORT", "value": "8080"}), false),
            (json!("not an env var"), false),
        ];
        for (env, want) in cases {
            assert_eq!(artefacts.is_env(&env), want, "{env}");
        }
    }

    fn binding_names(template: &Value) -> Vec<String> {
        let rules = ArtefactRules::default();
        let artefacts = Artefacts::for_templates(&rules, &[template]);
        artefacts.bindings(template).into_keys().collect()
    }

    #[test]
    fn bindings_are_named_by_mount_path_or_volume() {
        let template = json!({"spec": {
            "containers": [{"name": "app", "volumeMounts": [
                {"name": "servicebinding-u1", "mountPath": "/bindings/orders-db"},
                {"name": "data", "mountPath": "/data"}]}],
            "volumes": [
                {"name": "data", "emptyDir": {}},
                {"name": "servicebinding-u1", "projected": {}},
                {"name": "servicebinding-u2", "projected": {}}]}});
        assert_eq!(binding_names(&template), ["orders-db", "servicebinding-u2"]);
    }

    #[test]
    fn bindings_are_named_by_the_first_container_that_mounts_them() {
        let template = json!({"spec": {
            "initContainers": [{"name": "migrate", "volumeMounts": [
                {"name": "servicebinding-u1", "mountPath": "/init-bindings/orders-db/"}]}],
            "containers": [
                {"name": "app", "volumeMounts": [
                    {"name": "servicebinding-u1", "mountPath": "/bindings/renamed"}]},
                {"name": "sidecar", "volumeMounts": [
                    {"name": "servicebinding-u2", "mountPath": "/"},
                    {"name": "servicebinding-u2", "mountPath": "/bindings/cache"}]}],
            "volumes": [
                {"name": "servicebinding-u1", "projected": {}},
                {"name": "servicebinding-u2", "projected": {}}]}});
        assert_eq!(binding_names(&template), ["cache", "orders-db"]);
    }

    #[test]
    fn a_template_without_projection_has_no_artefact() {
        let template = json!({"metadata": {"annotations": {"a": "b"}},
            "spec": {"containers": [{"name": "app", "env": [{"name": "PORT", "value": "8080"}]}]}});
        let rules = ArtefactRules::default();
        assert!(!Artefacts::for_templates(&rules, &[&template]).present_in(&template));
    }
}
