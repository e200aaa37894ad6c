//! What counts as a binding artefact: exactly what a servicebinding.io projector
//! (servicebinding/runtime, or the older VMware implementation) writes into a pod template.
//! Artefacts are recognised by their whole shape, never by a name prefix alone: anything that
//! merely looks similar is the app owner's configuration, and a change to it is a restage.
//!
//! [`TEMPLATE_SHAPE`] declares what of a pod template is read: every member read here, and no
//! more. A member it does not declare is kept as text: found, but never a string, list or
//! object.

use std::collections::{BTreeMap, BTreeSet};

use crate::view::{at, items, name_of};
use raw::Reach::{Shaped, WhenAsked, Whole};
use raw::{Shape, Tree};

/// Volumes projected by servicebinding/runtime: `servicebinding-<ServiceBinding uid>`.
pub const SERVICEBINDING_VOLUME_PREFIX: &str = "servicebinding-";
/// Template annotations written by servicebinding/runtime: `<prefix><what>-<uid>`.
pub const PROJECTOR_ANNOTATION_PREFIX: &str = "projector.servicebinding.io/";
/// What the projector's annotations record: the secret name, the binding's type and provider,
/// and (on the workload's own metadata) the container mapping.
const PROJECTOR_ANNOTATION_KINDS: [&str; 4] = ["secret-", "type-", "provider-", "mapping-"];
/// The secret-name annotation: its value names the binding secret.
pub const PROJECTOR_SECRET_ANNOTATION_PREFIX: &str = "projector.servicebinding.io/secret-";
/// Volumes of the VMware implementation: `binding-<40 hex digits>`.
pub const VMWARE_VOLUME_PREFIX: &str = "binding-";
/// Annotations of the VMware implementation.
pub const VMWARE_ANNOTATION_PREFIX: &str = "internal.bindings.labs.vmware.com/projection";
/// Appended by the projector when a container lacks it; unbinding never removes it.
pub const SERVICE_BINDING_ROOT: &str = "SERVICE_BINDING_ROOT";
/// The only value the projector writes for `SERVICE_BINDING_ROOT`.
pub const DEFAULT_ROOT: &str = "/bindings";

/// What recognition reads of a pod template: the template's annotations, and of its volumes,
/// env vars and mounts the members the functions below look at. Volumes, env vars and mounts
/// are read when first looked into: most are the same text in both templates, and are never
/// looked into.
pub static TEMPLATE_SHAPE: Shape =
    Shape::object(&[("metadata", Shaped(&METADATA)), ("spec", Shaped(&POD))]);
static METADATA: Shape = Shape::object(&[("annotations", Whole)]);
static POD: Shape = Shape::object(&[
    ("volumes", Shaped(&VOLUMES)),
    ("containers", Shaped(&CONTAINERS)),
    ("initContainers", Shaped(&CONTAINERS)),
]);
static CONTAINERS: Shape = Shape::list(Shaped(&CONTAINER));
static CONTAINER: Shape =
    Shape::object(&[("env", Shaped(&ENV)), ("volumeMounts", Shaped(&MOUNTS))]);
/// A volume's name, and the secrets it projects or mounts.
static VOLUMES: Shape = Shape::list(WhenAsked(&VOLUME));
static VOLUME: Shape = Shape::object(&[
    ("name", Whole),
    ("projected", Shaped(&PROJECTED)),
    ("secret", Shaped(&SECRET_VOLUME)),
]);
static PROJECTED: Shape = Shape::object(&[("sources", Shaped(&SOURCES))]);
static SOURCES: Shape = Shape::list(Shaped(&SOURCE));
static SOURCE: Shape = Shape::object(&[("secret", Shaped(&NAMED))]);
static SECRET_VOLUME: Shape = Shape::object(&[("secretName", Whole)]);
/// An env var's name and value, and the secret or field it is mapped from.
static ENV: Shape = Shape::list(WhenAsked(&VAR));
static VAR: Shape = Shape::object(&[
    ("name", Whole),
    ("value", Whole),
    ("valueFrom", Shaped(&VALUE_FROM)),
]);
static VALUE_FROM: Shape = Shape::object(&[
    ("secretKeyRef", Shaped(&NAMED)),
    ("fieldRef", Shaped(&FIELD_REF)),
]);
static NAMED: Shape = Shape::object(&[("name", Whole)]);
static FIELD_REF: Shape = Shape::object(&[("fieldPath", Whole)]);
/// A mount's volume and path.
static MOUNTS: Shape = Shape::list(WhenAsked(&MOUNT));
static MOUNT: Shape = Shape::object(&[("name", Whole), ("mountPath", Whole)]);

/// The built-in recognisers plus the prefixes an operator adds in the settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArtefactRules {
    /// A volume whose name starts with one of these is a binding volume, whatever its source.
    pub extra_volume_prefixes: Vec<String>,
    /// A template annotation whose key starts with one of these is a binding annotation.
    pub extra_annotation_prefixes: Vec<String>,
}

impl ArtefactRules {
    /// A pod volume (`spec.volumes[*]`) projected for a binding.
    pub fn is_binding_volume<T: Tree>(&self, volume: &T) -> bool {
        let Some(name) = name_of(volume) else {
            return false;
        };
        let built_in = name
            .strip_prefix(SERVICEBINDING_VOLUME_PREFIX)
            .is_some_and(is_uid)
            || name
                .strip_prefix(VMWARE_VOLUME_PREFIX)
                .is_some_and(is_sha1_hex);
        (built_in && volume.get("projected").is_some_and(T::is_object))
            || starts_with_any(name, &self.extra_volume_prefixes)
    }

    /// A cheap first test of a volume name, before a set look-up.
    fn may_name_volume(&self, name: &str) -> bool {
        name.starts_with(SERVICEBINDING_VOLUME_PREFIX)
            || name.starts_with(VMWARE_VOLUME_PREFIX)
            || starts_with_any(name, &self.extra_volume_prefixes)
    }

    pub fn is_binding_annotation(&self, key: &str) -> bool {
        let projector = key
            .strip_prefix(PROJECTOR_ANNOTATION_PREFIX)
            .is_some_and(|rest| {
                PROJECTOR_ANNOTATION_KINDS
                    .iter()
                    .any(|kind| rest.strip_prefix(kind).is_some_and(is_uid))
            });
        projector
            || key.starts_with(VMWARE_ANNOTATION_PREFIX)
            || starts_with_any(key, &self.extra_annotation_prefixes)
    }
}

fn starts_with_any(text: &str, prefixes: &[String]) -> bool {
    prefixes.iter().any(|p| text.starts_with(p.as_str()))
}

/// A Kubernetes object uid as the API server writes it: a lowercase RFC 4122 UUID.
fn is_uid(text: &str) -> bool {
    text.len() == 36
        && text.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => is_lower_hex(b),
        })
}

/// 40 lowercase hex digits: a plain `binding-cache` volume of the app's own must not count.
fn is_sha1_hex(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(is_lower_hex)
}

fn is_lower_hex(b: u8) -> bool {
    matches!(b, b'0'..=b'9' | b'a'..=b'f')
}

/// `{"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}` and nothing else: what the
/// projector appends. An app that declares its own root keeps it, and changing it is a restage.
pub fn is_projector_root<T: Tree>(env: &T) -> bool {
    env.members().count() == 2
        && name_of(env) == Some(SERVICE_BINDING_ROOT)
        && env.get("value").and_then(T::as_str) == Some(DEFAULT_ROOT)
}

/// The recognisers applied to one pair of templates. Binding volumes and binding secrets are
/// collected from old ∪ new, so a mount or an env var still counts in the template that lost
/// its volume or annotation (a wipe removes them together).
#[derive(Debug)]
pub struct Artefacts<'a> {
    rules: &'a ArtefactRules,
    /// BTreeSets: a HashSet would seed its hasher from WASI randomness on every request.
    volumes: BTreeSet<&'a str>,
    /// Named by the projector's `secret-<uid>` annotations and by the secrets binding volumes
    /// read (the VMware implementation records secrets only on the workload).
    secrets: BTreeSet<&'a str>,
}

impl<'a> Artefacts<'a> {
    pub fn for_templates<T: Tree>(rules: &'a ArtefactRules, templates: &[&'a T]) -> Self {
        let mut artefacts = Artefacts {
            rules,
            volumes: BTreeSet::new(),
            secrets: BTreeSet::new(),
        };
        for &template in templates {
            artefacts
                .secrets
                .extend(secret_annotations(rules, annotations(template)));
            for volume in binding_volumes(rules, template) {
                artefacts.volumes.extend(name_of(volume));
                artefacts.secrets.extend(volume_secrets(volume));
            }
        }
        artefacts
    }

    pub fn is_annotation(&self, key: &str) -> bool {
        self.rules.is_binding_annotation(key)
    }

    /// A pod volume (`spec.volumes[*]`) projected for a binding.
    pub fn is_volume<T: Tree>(&self, volume: &T) -> bool {
        self.rules.is_binding_volume(volume)
    }

    /// A container volumeMount of a binding volume: mounts follow their volume.
    pub fn is_mount<T: Tree>(&self, mount: &T) -> bool {
        name_of(mount).is_some_and(|n| self.rules.may_name_volume(n) && self.volumes.contains(n))
    }

    /// The projector's `SERVICE_BINDING_ROOT`, or an env var mapped from a binding secret or a
    /// projector annotation.
    pub fn is_env<T: Tree>(&self, env: &T) -> bool {
        if !env.is_object() {
            return false;
        }
        if is_projector_root(env) {
            return true;
        }
        let Some(from) = env.get("valueFrom") else {
            return false;
        };
        let secret = at(from, &["secretKeyRef", "name"])
            .and_then(T::as_str)
            .is_some_and(|s| self.secrets.contains(s));
        let field = at(from, &["fieldRef", "fieldPath"])
            .and_then(T::as_str)
            .and_then(annotation_in_field_path)
            .is_some_and(|key| self.is_annotation(key));
        secret || field
    }

    /// Whether a template carries any binding artefact at all.
    pub fn present_in<T: Tree>(&self, template: &T) -> bool {
        let annotations = at(template, &["metadata", "annotations"])
            .is_some_and(|a| a.members().any(|(k, _)| self.is_annotation(k)));
        annotations
            || items(at(template, &["spec", "volumes"])).any(|v| self.is_volume(v))
            || containers(template).any(|c| {
                items(c.get("env")).any(|e| self.is_env(e))
                    || items(c.get("volumeMounts")).any(|m| self.is_mount(m))
            })
    }

    /// Whether any container of the template has the projector's `SERVICE_BINDING_ROOT`.
    pub fn has_projector_root<T: Tree>(&self, template: &T) -> bool {
        containers(template)
            .flat_map(|c| items(c.get("env")))
            .filter(|e| e.may_contain(SERVICE_BINDING_ROOT) && e.is_object())
            .any(is_projector_root)
    }

    /// The binding secrets a template projects: a pod created from it needs every one.
    pub fn secrets_in<T: Tree>(&self, template: &'a T) -> BTreeSet<&'a str> {
        self.secrets_named(
            annotations(template),
            items(at(template, &["spec", "volumes"])),
            containers(template).flat_map(|c| items(c.get("env"))),
        )
    }

    /// The binding secrets these annotations, volumes and env vars of a template name.
    pub fn secrets_named<T: Tree + 'a>(
        &self,
        annotations: impl Iterator<Item = (&'a str, &'a T)>,
        volumes: impl Iterator<Item = &'a T>,
        env: impl Iterator<Item = &'a T>,
    ) -> BTreeSet<&'a str> {
        let mut secrets: BTreeSet<&str> = secret_annotations(self.rules, annotations).collect();
        let volumes = volumes.filter(|v| self.rules.is_binding_volume(*v));
        secrets.extend(volumes.flat_map(volume_secrets));
        let env_secrets = env
            .filter(|e| self.is_env(*e))
            .filter_map(|e| at(e, &["valueFrom", "secretKeyRef", "name"])?.as_str());
        secrets.extend(env_secrets);
        secrets
    }

    /// The bindings projected into a template, by binding name: the mount path relative to the
    /// `SERVICE_BINDING_ROOT` of the first container (init containers first) that mounts the
    /// binding volume, or the volume name when no container mounts it.
    pub fn bindings<T: Tree>(&self, template: &'a T) -> BTreeMap<String, &'a T> {
        bindings_by_name(
            self.named_volumes(template)
                .into_iter()
                .map(|(_, n, v)| (n, v)),
        )
    }

    /// The binding volumes of a template in order, each with its place in `spec.volumes` and
    /// the name of the binding it projects (see `bindings`).
    pub fn named_volumes<T: Tree>(&self, template: &'a T) -> Vec<(usize, &'a str, &'a T)> {
        let volumes: Vec<(usize, &str, &T)> = items(at(template, &["spec", "volumes"]))
            .enumerate()
            .filter(|(_, v)| self.rules.is_binding_volume(*v))
            .filter_map(|(i, v)| Some((i, name_of(v)?, v)))
            .collect();
        let mut mounted_as: BTreeMap<&str, Option<&str>> =
            volumes.iter().map(|(_, name, _)| (*name, None)).collect();
        // The projector mounts every binding into every container: once each volume has a
        // name, the remaining containers repeat it.
        let mut unnamed = mounted_as.len();
        for container in containers(template) {
            if unnamed == 0 {
                break;
            }
            let root = own_root(container);
            for mount in items(container.get("volumeMounts")) {
                let Some(slot @ None) = name_of(mount).and_then(|v| mounted_as.get_mut(v)) else {
                    continue;
                };
                if let Some(name) = binding_name(mount, root) {
                    *slot = Some(name);
                    unnamed -= 1;
                }
            }
        }
        volumes
            .into_iter()
            .map(|(i, volume, v)| {
                let binding = mounted_as.get(volume).copied().flatten().unwrap_or(volume);
                (i, binding, v)
            })
            .collect()
    }
}

/// Volumes by binding name; of two with the same name, the later one.
pub fn bindings_by_name<'a, T>(
    named: impl IntoIterator<Item = (&'a str, &'a T)>,
) -> BTreeMap<String, &'a T> {
    named.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

fn binding_volumes<'a, T: Tree>(
    rules: &'a ArtefactRules,
    template: &'a T,
) -> impl Iterator<Item = &'a T> {
    items(at(template, &["spec", "volumes"])).filter(|v| rules.is_binding_volume(*v))
}

/// A template's annotations.
fn annotations<T: Tree>(template: &T) -> impl Iterator<Item = (&str, &T)> {
    at(template, &["metadata", "annotations"])
        .into_iter()
        .flat_map(|annotations| annotations.members())
}

/// The secrets named by the projector's secret annotations among `annotations`.
fn secret_annotations<'a, T: Tree + 'a>(
    rules: &'a ArtefactRules,
    annotations: impl Iterator<Item = (&'a str, &'a T)>,
) -> impl Iterator<Item = &'a str> {
    annotations
        .filter(|(key, _)| {
            key.starts_with(PROJECTOR_SECRET_ANNOTATION_PREFIX) && rules.is_binding_annotation(key)
        })
        .filter_map(|(_, value)| value.as_str())
}

/// The secrets a binding volume reads, whatever its source kind: the secret sources of a
/// `projected` volume, or a plain `secret` volume's `secretName` (an extra-prefix volume).
fn volume_secrets<T: Tree>(volume: &T) -> impl Iterator<Item = &str> {
    items(at(volume, &["projected", "sources"]))
        .filter_map(|source| at(source, &["secret", "name"])?.as_str())
        .chain(at(volume, &["secret", "secretName"]).and_then(T::as_str))
}

/// The root a container declares as a plain value, the projector's or the app's own.
fn own_root<T: Tree>(container: &T) -> Option<&str> {
    items(container.get("env"))
        .find(|e| e.may_contain(SERVICE_BINDING_ROOT) && name_of(*e) == Some(SERVICE_BINDING_ROOT))
        .and_then(|e| e.get("value")?.as_str())
}

/// `$SERVICE_BINDING_ROOT/orders-db` → `orders-db`; without a readable root, the last path
/// segment.
fn binding_name<'a, T: Tree>(mount: &'a T, root: Option<&str>) -> Option<&'a str> {
    let path = mount.get("mountPath")?.as_str()?;
    let under_root = root
        .map(|r| r.trim_end_matches('/'))
        .and_then(|r| path.strip_prefix(r)?.strip_prefix('/'))
        .map(|rest| rest.trim_matches('/'))
        .filter(|rest| !rest.is_empty());
    under_root.or_else(|| {
        path.trim_end_matches('/')
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
    })
}

/// `metadata.annotations['key']` → `key`, the only form the projector writes.
fn annotation_in_field_path(path: &str) -> Option<&str> {
    path.strip_prefix("metadata.annotations['")?
        .strip_suffix("']")
}

/// Containers and init containers: the projector binds both.
pub fn containers<T: Tree>(template: &T) -> impl Iterator<Item = &T> {
    items(at(template, &["spec", "initContainers"]))
        .chain(items(at(template, &["spec", "containers"])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    const UID: &str = "3f9c2b7e-1d4a-4e8b-9c6f-0a1b2c3d4e5f";

    fn rules() -> ArtefactRules {
        ArtefactRules {
            extra_volume_prefixes: vec!["acme-binding-".into()],
            extra_annotation_prefixes: vec!["bindings.acme.example/".into()],
        }
    }

    #[test]
    fn binding_volumes_are_recognised_by_their_whole_shape() {
        let projected = json!({"sources": [{"secret": {"name": "s"}}]});
        let cases = [
            (
                json!({"name": format!("servicebinding-{UID}"), "projected": projected}),
                true,
            ),
            (
                json!({"name": "binding-0123456789abcdef0123456789abcdef01234567", "projected": projected}),
                true,
            ),
            (
                json!({"name": "acme-binding-orders", "secret": {"secretName": "s"}}),
                true,
            ),
            (
                json!({"name": format!("servicebinding-{UID}"), "configMap": {"name": "c"}}),
                false,
            ),
            (
                json!({"name": "servicebinding-overrides", "projected": projected}),
                false,
            ),
            (
                json!({"name": format!("servicebinding-{}", UID.to_uppercase()), "projected": projected}),
                false,
            ),
            (
                json!({"name": format!("servicebinding-{}", &UID[..35]), "projected": projected}),
                false,
            ),
            (
                json!({"name": format!("servicebinding-{}", UID.replace('-', "x")), "projected": projected}),
                false,
            ),
            (
                json!({"name": "binding-cache", "projected": projected}),
                false,
            ),
            (
                json!({"name": "binding-0123456789ABCDEF0123456789ABCDEF01234567", "projected": projected}),
                false,
            ),
            (
                json!({"name": "binding-0123456789abcdef0123456789abcdef0123456", "projected": projected}),
                false,
            ),
            (
                json!({"name": "binding-0123456789abcdef0123456789abcdef01234567", "emptyDir": {}}),
                false,
            ),
            (json!({"name": "data", "projected": projected}), false),
            (
                json!({"name": format!("my-servicebinding-{UID}"), "projected": projected}),
                false,
            ),
            (json!("servicebinding-not-an-object"), false),
        ];
        for (volume, want) in cases {
            assert_eq!(rules().is_binding_volume(&volume), want, "{volume}");
        }
    }

    #[test]
    fn binding_annotations_are_recognised_by_their_whole_key() {
        let cases = [
            (format!("projector.servicebinding.io/secret-{UID}"), true),
            (format!("projector.servicebinding.io/type-{UID}"), true),
            (format!("projector.servicebinding.io/provider-{UID}"), true),
            (format!("projector.servicebinding.io/mapping-{UID}"), true),
            ("projector.servicebinding.io/secret-abc".into(), false),
            (format!("projector.servicebinding.io/owner-{UID}"), false),
            (
                "internal.bindings.labs.vmware.com/projection-abc".into(),
                true,
            ),
            ("bindings.acme.example/orders".into(), true),
            ("korifi.cloudfoundry.org/version".into(), false),
            ("kubectl.kubernetes.io/restartedAt".into(), false),
        ];
        for (key, want) in cases {
            assert_eq!(rules().is_binding_annotation(&key), want, "{key}");
        }
    }

    #[test]
    fn env_vars_mapped_from_bindings_are_artefacts() {
        let template = json!({"metadata": {"annotations": {
            format!("projector.servicebinding.io/secret-{UID}"): "orders-secret"}}});
        let rules = rules();
        let artefacts = Artefacts::for_templates(&rules, &[&template]);
        let type_path = format!("metadata.annotations['projector.servicebinding.io/type-{UID}']");
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
                json!({"name": "DB_TYPE", "valueFrom": {"fieldRef": {"fieldPath": type_path}}}),
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

    #[test]
    fn only_the_projectors_exact_root_is_an_artefact() {
        let rules = ArtefactRules::default();
        let artefacts = Artefacts::for_templates::<Value>(&rules, &[]);
        let cases = [
            (
                json!({"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}),
                true,
            ),
            (
                json!({"name": "SERVICE_BINDING_ROOT", "value": "/etc/bindings"}),
                false,
            ),
            (
                json!({"name": "SERVICE_BINDING_ROOT", "value": "/bindings/"}),
                false,
            ),
            (
                json!({"name": "SERVICE_BINDING_ROOT", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "root"}}}),
                false,
            ),
            (
                json!({"name": "SERVICE_BINDING_ROOT", "value": "/bindings", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}),
                false,
            ),
        ];
        for (env, want) in cases {
            assert_eq!(artefacts.is_env(&env), want, "{env}");
        }
    }

    #[test]
    fn vmware_secrets_are_learnt_from_binding_volume_sources() {
        let volume = "binding-0123456789abcdef0123456789abcdef01234567";
        let template = json!({"spec": {"volumes": [
            {"name": volume, "projected": {"sources": [{"secret": {"name": "orders-secret"}}]}},
            {"name": "app-config", "projected": {"sources": [{"secret": {"name": "app-env"}}]}}]}});
        let rules = ArtefactRules::default();
        let artefacts = Artefacts::for_templates(&rules, &[&template]);
        let mapped = |secret: &str| json!({"name": "X", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}});
        assert!(artefacts.is_env(&mapped("orders-secret")));
        assert!(
            !artefacts.is_env(&mapped("app-env")),
            "not a binding volume's secret"
        );
        assert!(artefacts.is_mount(&json!({"name": volume, "mountPath": "/bindings/orders"})));
        assert!(!artefacts.is_mount(&json!({"name": "app-config", "mountPath": "/config"})));
    }

    fn binding_names(template: &Value) -> Vec<String> {
        let rules = ArtefactRules::default();
        let artefacts = Artefacts::for_templates(&rules, &[template]);
        artefacts.bindings(template).into_keys().collect()
    }

    fn volume(n: u8) -> Value {
        json!({"name": format!("servicebinding-{n}{}", &UID[1..]), "projected": {"sources": []}})
    }

    fn mount(n: u8, path: &str) -> Value {
        json!({"name": format!("servicebinding-{n}{}", &UID[1..]), "mountPath": path})
    }

    #[test]
    fn bindings_are_named_by_mount_path_or_volume() {
        let template = json!({"spec": {
            "containers": [{"name": "app", "volumeMounts": [
                mount(1, "/bindings/orders-db"), {"name": "data", "mountPath": "/data"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}, volume(1), volume(2)]}});
        assert_eq!(
            binding_names(&template),
            [
                "orders-db".to_string(),
                format!("servicebinding-2{}", &UID[1..])
            ]
        );
    }

    #[test]
    fn bindings_are_named_by_the_first_container_that_mounts_them() {
        let template = json!({"spec": {
            "initContainers": [{"name": "migrate", "volumeMounts": [mount(1, "/init-bindings/orders-db/")]}],
            "containers": [
                {"name": "app", "volumeMounts": [mount(1, "/bindings/renamed")]},
                {"name": "sidecar", "volumeMounts": [mount(2, "/"), mount(2, "/bindings/cache")]}],
            "volumes": [volume(1), volume(2)]}});
        assert_eq!(binding_names(&template), ["cache", "orders-db"]);
    }

    #[test]
    fn binding_names_are_relative_to_the_containers_own_root() {
        let template = json!({"spec": {
            "containers": [{"name": "app",
                "env": [{"name": "SERVICE_BINDING_ROOT", "value": "/etc/svc/"}],
                "volumeMounts": [mount(1, "/etc/svc/orders-db"), mount(2, "/elsewhere/cache")]}],
            "volumes": [volume(1), volume(2)]}});
        assert_eq!(binding_names(&template), ["cache", "orders-db"]);
    }

    #[test]
    fn a_template_without_projection_has_no_artefact() {
        let template = json!({"metadata": {"annotations": {"a": "b"}},
            "spec": {"containers": [{"name": "app", "env": [{"name": "PORT", "value": "8080"}]}]}});
        let rules = ArtefactRules::default();
        assert!(!Artefacts::for_templates(&rules, &[&template]).present_in(&template));
    }

    #[test]
    fn secrets_in_a_template_are_those_its_pods_need() {
        let with_secret = |n: u8, secret: &str| {
            json!({"name": format!("servicebinding-{n}{}", &UID[1..]),
                "projected": {"sources": [{"secret": {"name": secret}}]}})
        };
        let template = json!({"spec": {"volumes": [with_secret(1, "a"), with_secret(2, "b"),
            {"name": "own", "projected": {"sources": [{"secret": {"name": "own"}}]}}]}});
        let rules = ArtefactRules::default();
        let artefacts = Artefacts::for_templates(&rules, &[&template]);
        assert_eq!(
            artefacts
                .secrets_in(&template)
                .into_iter()
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
    }
}
