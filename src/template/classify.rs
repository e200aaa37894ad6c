//! Template classification: compare `oldObject.spec.template` with `object.spec.template` as
//! JSON, with binding artefacts left out of both.
//!
//! The comparison walks both templates side by side instead of building stripped copies, so
//! every field the policy does not know still takes part (as JSON) and nothing is cloned. It
//! reads any `Tree`: the templates as a request is read (to the shape `artefacts::TEMPLATE_SHAPE`,
//! members recognition never reads left raw), or whole `serde_json` values (tests, tools).

use std::collections::BTreeMap;

use crate::template::artefacts::{ArtefactRules, Artefacts};
use crate::view::items;
use raw::Tree;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// The templates are equal.
    NoChange,
    /// Only binding artefacts differ.
    BindingOnly,
    /// Binding-only, and the new template lost every artefact the old one had, the projector's
    /// own root included (which unbinding never removes): a controller wrote its own desired
    /// template; the projector restores live bindings in the same request.
    Wipe,
    /// Anything else differs: the pods are going to roll anyway.
    Restage,
}

/// Binding changes by binding name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BindingDelta {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Present in both with a different projection (rotated credentials, a new binding of the
    /// same name).
    pub changed: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub kind: ChangeKind,
    pub delta: BindingDelta,
    /// Binding-only, and no artefact is left where the old template had some: the last unbind
    /// of an app that declares its own root, or an overwrite by a controller that the template
    /// alone cannot tell apart (the policy asks the workload's markers).
    pub emptied: bool,
    /// Binding secrets the old template projects and the new one no longer does (a binding
    /// removed, or switched to another secret): the unbind deletes them.
    pub dropped_secrets: Vec<String>,
}

impl Change {
    /// What this change takes away that a pod may still mount: a binding removed, or a secret
    /// no longer projected (the unbind deletes it). `None` when it only adds or changes
    /// bindings within the secrets they already project.
    pub fn removal(&self) -> Option<String> {
        if !self.delta.removed.is_empty() {
            Some(format!("binding {} removed", self.delta.removed.join(", ")))
        } else if self.dropped_secrets.is_empty() {
            None
        } else if self.delta.changed.is_empty() {
            Some(format!(
                "secret {} no longer projected",
                self.dropped_secrets.join(", ")
            ))
        } else {
            Some(format!(
                "binding {} switched from secret {}",
                self.delta.changed.join(", "),
                self.dropped_secrets.join(", ")
            ))
        }
    }
}

fn unchanged(kind: ChangeKind) -> Change {
    Change {
        kind,
        emptied: false,
        delta: BindingDelta::default(),
        dropped_secrets: Vec::new(),
    }
}

pub fn classify<T: Tree>(old: &T, new: &T, rules: &ArtefactRules) -> Change {
    classify_by(old, new, rules, templates_equal)
}

/// `classify`, with whether the templates are equal once the artefacts are left out told by
/// `equal_apart` (the reference implementation's plain comparison, in the differential tests).
pub(crate) fn classify_by<T: Tree>(
    old: &T,
    new: &T,
    rules: &ArtefactRules,
    equal_apart: impl FnOnce(&T, &T, &Artefacts) -> bool,
) -> Change {
    if old == new {
        return unchanged(ChangeKind::NoChange);
    }
    let artefacts = Artefacts::for_templates(rules, &[old, new]);
    if !equal_apart(old, new, &artefacts) {
        return unchanged(ChangeKind::Restage);
    }
    // A bind leaves artefacts in the new template: asked first, it settles most requests.
    let emptied = !artefacts.present_in(new) && artefacts.present_in(old);
    // The projector never removes its own root: a template that lost it was overwritten.
    if emptied && artefacts.has_projector_root(old) {
        return unchanged(ChangeKind::Wipe);
    }
    let kept = artefacts.secrets_in(new);
    Change {
        kind: ChangeKind::BindingOnly,
        emptied,
        delta: delta(old, new, &artefacts),
        dropped_secrets: artefacts
            .secrets_in(old)
            .into_iter()
            .filter(|s| !kept.contains(s))
            .map(str::to_string)
            .collect(),
    }
}

/// The members compared apart at each level of a template, where binding artefacts sit; every
/// other member compares as JSON.
pub const TEMPLATE_APART: &[&str] = &["metadata", "spec"];
pub const METADATA_APART: &[&str] = &["annotations"];
pub const POD_SPEC_APART: &[&str] = &["volumes", "containers", "initContainers"];
pub const CONTAINER_APART: &[&str] = &["env", "volumeMounts"];

fn delta<T: Tree>(old: &T, new: &T, artefacts: &Artefacts) -> BindingDelta {
    delta_between(artefacts.bindings(old), artefacts.bindings(new))
}

/// The binding changes between two templates' bindings by name (`Artefacts::bindings`).
pub fn delta_between<T: Tree>(
    before: BTreeMap<String, &T>,
    after: BTreeMap<String, &T>,
) -> BindingDelta {
    let mut delta = BindingDelta {
        added: after
            .keys()
            .filter(|n| !before.contains_key(*n))
            .cloned()
            .collect(),
        removed: before
            .keys()
            .filter(|n| !after.contains_key(*n))
            .cloned()
            .collect(),
        changed: after
            .iter()
            .filter(|(n, v)| before.get(*n).is_some_and(|b| b != *v))
            .map(|(n, _)| n.clone())
            .collect(),
    };
    // Something in the projection changed (an env mapping, a type annotation) that no single
    // volume shows: every binding left in the template is affected.
    if delta == BindingDelta::default() {
        delta.changed = after.into_keys().collect();
    }
    delta
}

fn templates_equal<T: Tree>(a: &T, b: &T, art: &Artefacts) -> bool {
    fields_equal(a, b, TEMPLATE_APART)
        && metadata_equal(a.get("metadata"), b.get("metadata"), art)
        && pod_spec_equal(a.get("spec"), b.get("spec"), art)
}

fn metadata_equal<T: Tree>(a: Option<&T>, b: Option<&T>, art: &Artefacts) -> bool {
    with_objects(a, b, |a, b| {
        fields_equal_in(a, b, METADATA_APART)
            && maps_equal(a.get("annotations"), b.get("annotations"), |k| {
                !art.is_annotation(k)
            })
    })
}

fn pod_spec_equal<T: Tree>(a: Option<&T>, b: Option<&T>, art: &Artefacts) -> bool {
    with_objects(a, b, |a, b| {
        let containers_equal = |key| {
            lists_equal(
                a.get(key),
                b.get(key),
                |_| true,
                |x, y| container_equal(x, y, art),
            )
        };
        fields_equal_in(a, b, POD_SPEC_APART)
            && lists_equal(
                a.get("volumes"),
                b.get("volumes"),
                |v| !art.is_volume(v),
                T::eq,
            )
            && containers_equal("containers")
            && containers_equal("initContainers")
    })
}

fn container_equal<T: Tree>(a: &T, b: &T, art: &Artefacts) -> bool {
    with_objects(Some(a), Some(b), |a, b| {
        fields_equal_in(a, b, CONTAINER_APART)
            && lists_equal_lazily(a.get("env"), b.get("env"), |e| !art.is_env(e))
            && lists_equal(
                a.get("volumeMounts"),
                b.get("volumeMounts"),
                |m| !art.is_mount(m),
                T::eq,
            )
    })
}

/// Applies `eq` when both sides are JSON objects; otherwise compares them as JSON.
fn with_objects<T: Tree>(a: Option<&T>, b: Option<&T>, eq: impl FnOnce(&T, &T) -> bool) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if a.is_object() && b.is_object() => eq(a, b),
        _ => a == b,
    }
}

fn fields_equal<T: Tree>(a: &T, b: &T, special: &[&str]) -> bool {
    with_objects(Some(a), Some(b), |a, b| fields_equal_in(a, b, special))
}

/// Every field but the `special` ones (compared by the caller) is equal as JSON. Both maps
/// iterate in key order, so they are walked in lockstep, as `Map == Map` does.
pub fn fields_equal_in<T: Tree>(a: &T, b: &T, special: &[&str]) -> bool {
    let plain = |(k, _): &(&str, &T)| !special.contains(k);
    let (mut xs, mut ys) = (a.members().filter(plain), b.members().filter(plain));
    loop {
        match (xs.next(), ys.next()) {
            (None, None) => return true,
            (Some((k, x)), Some((l, y))) if k == l && x == y => continue,
            _ => return false,
        }
    }
}

/// Lists compared on the elements `keep` selects, in order. An absent or null list is an
/// empty one: the projector adds `volumes` to a template that had none.
fn lists_equal<T: Tree>(
    a: Option<&T>,
    b: Option<&T>,
    keep: impl Fn(&T) -> bool,
    eq: impl Fn(&T, &T) -> bool,
) -> bool {
    if !is_list_or_nothing(a) || !is_list_or_nothing(b) {
        return a == b;
    }
    let mut xs = items(a).filter(|v| keep(v));
    let mut ys = items(b).filter(|v| keep(v));
    loop {
        match (xs.next(), ys.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if eq(x, y) => continue,
            _ => return false,
        }
    }
}

/// `lists_equal` for a `keep` that costs more than comparing two elements (env vars): walked
/// in lockstep, asking `keep` only where the lists differ. Equal elements are both kept or
/// both dropped, so matching them leaves the kept sequences as they were.
fn lists_equal_lazily<T: Tree>(a: Option<&T>, b: Option<&T>, keep: impl Fn(&T) -> bool) -> bool {
    if !is_list_or_nothing(a) || !is_list_or_nothing(b) {
        return a == b;
    }
    let (mut xs, mut ys) = (items(a).peekable(), items(b).peekable());
    loop {
        match (xs.peek(), ys.peek()) {
            (None, None) => return true,
            (Some(x), Some(y)) if x == y => {
                xs.next();
                ys.next();
            }
            (Some(x), _) if !keep(x) => {
                xs.next();
            }
            (_, Some(y)) if !keep(y) => {
                ys.next();
            }
            _ => return false,
        }
    }
}

/// Maps compared on the keys `keep` selects. An absent or null map is an empty one.
fn maps_equal<T: Tree>(a: Option<&T>, b: Option<&T>, keep: impl Fn(&str) -> bool) -> bool {
    if !is_map_or_nothing(a) || !is_map_or_nothing(b) {
        return a == b;
    }
    let kept = |(k, _): &(&str, &T)| keep(k);
    let (a, b) = (
        a.into_iter().flat_map(T::members),
        b.into_iter().flat_map(T::members),
    );
    a.filter(kept).eq(b.filter(kept))
}

/// A list, or absent or null (an empty one).
pub fn is_list_or_nothing<T: Tree>(v: Option<&T>) -> bool {
    v.is_none_or(|v| v.is_null() || v.as_list().is_some())
}

/// An object, or absent or null (an empty one).
pub fn is_map_or_nothing<T: Tree>(v: Option<&T>) -> bool {
    v.is_none_or(|v| v.is_null() || v.is_object())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::artefacts::TEMPLATE_SHAPE;
    use crate::template::fixtures::{fixture, set, template_of};
    use raw::{Node, Reach, Shape};
    use serde_json::{json, Value};

    fn kind(old: &Value, new: &Value) -> ChangeKind {
        classify(old, new, &ArtefactRules::default()).kind
    }

    fn push(doc: &mut Value, pointer: &str, value: Value) {
        let list = doc.pointer_mut(pointer).and_then(Value::as_array_mut);
        list.expect("a list").push(value);
    }

    fn remove(doc: &mut Value, pointer: &str) {
        let (parent, key) = pointer.rsplit_once('/').expect("a pointer");
        let object = doc.pointer_mut(parent).and_then(Value::as_object_mut);
        object.expect("an object").remove(key);
    }

    /// The shape a member of `shape` is read to.
    fn shape_of(shape: &'static Shape, key: &str) -> &'static Shape {
        match shape.members.iter().find(|(k, _)| *k == key) {
            Some((_, Reach::Shaped(inner))) => inner,
            other => panic!("{key} is not read to a shape of its own: {other:?}"),
        }
    }

    fn keys(shape: &Shape) -> Vec<&str> {
        shape.members.iter().map(|(k, _)| *k).collect()
    }

    #[test]
    fn the_members_compared_apart_are_the_ones_the_template_shape_reads() {
        // One compared apart but kept as text would show recognition nothing; one read but not
        // compared apart would be read for nothing.
        let pod = shape_of(&TEMPLATE_SHAPE, "spec");
        assert_eq!(keys(&TEMPLATE_SHAPE), TEMPLATE_APART);
        assert_eq!(keys(shape_of(&TEMPLATE_SHAPE, "metadata")), METADATA_APART);
        assert_eq!(keys(pod), POD_SPEC_APART);
        for list in ["containers", "initContainers"] {
            let Reach::Shaped(container) = shape_of(pod, list).elements else {
                panic!("{list}: containers not read to a shape");
            };
            assert_eq!(keys(container), CONTAINER_APART, "{list}");
        }
    }

    #[test]
    fn a_raw_member_too_deep_for_a_tree_is_read_and_counts_as_the_owners_change_where_it_differs() {
        // Deeper than serde_json builds trees (128 levels); valid JSON all the same.
        let deep = |leaf: u8| format!("{}{leaf}{}", "[".repeat(200), "]".repeat(200));
        let template = |leaf: u8, env: &str| {
            format!(
                r#"{{"spec": {{"affinity": {}, "containers": [{{"name": "app", "env": [{env}]}}]}}}}"#,
                deep(leaf)
            )
        };
        assert!(serde_json::from_str::<Value>(&template(1, "")).is_err());
        let rules = ArtefactRules::default();
        let texts = [
            template(1, ""),
            template(1, " "),
            template(1, r#"{"name": "E", "value": "1"}"#),
            template(2, ""),
        ];
        let [old, respaced, app_env, other_leaf] = texts
            .each_ref()
            .map(|t| Node::template(t, &TEMPLATE_SHAPE).expect("read"));
        let changed = |new| classify(&old, new, &rules).kind;
        assert_eq!(changed(&respaced), ChangeKind::NoChange);
        assert_eq!(changed(&app_env), ChangeKind::Restage);
        assert_eq!(changed(&other_leaf), ChangeKind::Restage);
    }

    #[test]
    fn reference_bind_and_rebind_are_binding_only() {
        let unbound = fixture("statefulset-0-unbound.json");
        let bound = fixture("statefulset-1-bound-upsi.json");
        let rebound = fixture("statefulset-2-rebound-managed.json");
        let bind = classify(
            template_of(&unbound),
            template_of(&bound),
            &ArtefactRules::default(),
        );
        assert_eq!(bind.kind, ChangeKind::BindingOnly);
        assert_eq!(bind.delta.added, ["d41d8cd9-8f00-4b20-9e80-0998ecf8427e"]);
        let rebind = classify(
            template_of(&bound),
            template_of(&rebound),
            &ArtefactRules::default(),
        );
        assert_eq!(rebind.kind, ChangeKind::BindingOnly);
        assert_eq!(rebind.delta.added, ["orders-db"]);
        assert_eq!(
            rebind.delta.removed,
            ["d41d8cd9-8f00-4b20-9e80-0998ecf8427e"]
        );
    }

    #[test]
    fn lists_compare_the_kept_elements_in_order() {
        // Upper case: kept; lower case: dropped (an artefact).
        let keep = |v: &Value| v.as_str().is_some_and(|s| s == s.to_uppercase());
        let cases: [(Value, Value, bool); 10] = [
            (json!(["A", "B"]), json!(["A", "B"]), true),
            (json!(["a", "B"]), json!(["B"]), true),
            (json!(["B"]), json!(["B", "c"]), true),
            (json!(["a", "B", "c"]), json!(["d", "B", "e", "f"]), true),
            (json!(["B", "a"]), json!(["a", "B"]), true),
            (json!(null), json!(["a"]), true),
            (json!(["A", "B"]), json!(["B", "A"]), false),
            (json!(["A"]), json!(["A", "B"]), false),
            (json!(["a", "B"]), json!(["a", "C"]), false),
            (json!(["a"]), json!({"not": "a list"}), false),
        ];
        for (a, b, want) in cases {
            for (x, y) in [(&a, &b), (&b, &a)] {
                let (x, y) = (Some(x), Some(y));
                assert_eq!(lists_equal(x, y, keep, Value::eq), want, "{a} vs {b}");
                assert_eq!(lists_equal_lazily(x, y, keep), want, "lazily: {a} vs {b}");
            }
        }
    }

    #[test]
    fn equal_templates_are_no_change() {
        let bound = fixture("statefulset-1-bound-upsi.json");
        assert_eq!(
            kind(template_of(&bound), template_of(&bound)),
            ChangeKind::NoChange
        );
    }

    #[test]
    fn stripping_every_artefact_is_a_wipe() {
        let bound = fixture("statefulset-1-bound-upsi.json");
        let unbound = fixture("statefulset-0-unbound.json");
        assert_eq!(
            kind(template_of(&bound), template_of(&unbound)),
            ChangeKind::Wipe
        );
    }

    #[test]
    fn restage_changes_are_never_binding_only() {
        let bound = fixture("statefulset-1-bound-upsi.json");
        let old = template_of(&bound);
        let edits: [(&str, Value); 7] = [
            (
                "/spec/containers/0/image",
                json!("registry.example.com/app@sha256:0000"),
            ),
            (
                "/metadata/labels/korifi.cloudfoundry.org~1version",
                json!("1"),
            ),
            (
                "/metadata/annotations/kubectl.kubernetes.io~1restartedAt",
                json!("2026-12-02T10:00:00Z"),
            ),
            ("/spec/containers/0/env/6/value", json!("2048M")),
            ("/spec/containers/0/resources/limits/memory", json!("2Gi")),
            ("/spec/hostUsers", json!(false)),
            ("/spec/containers/0/futureField", json!({"x": 1})),
        ];
        for (path, value) in edits {
            let mut new = old.clone();
            set(&mut new, path, value);
            assert_eq!(kind(old, &new), ChangeKind::Restage, "{path}");
        }
    }

    #[test]
    fn a_non_binding_volume_or_mount_is_a_restage() {
        let bound = fixture("statefulset-1-bound-upsi.json");
        let old = template_of(&bound);
        let mut new = old.clone();
        push(
            &mut new,
            "/spec/volumes",
            json!({"name": "cache", "emptyDir": {}}),
        );
        assert_eq!(kind(old, &new), ChangeKind::Restage);
        let mut new = old.clone();
        push(
            &mut new,
            "/spec/containers/0/volumeMounts",
            json!({"name": "cache", "mountPath": "/cache"}),
        );
        assert_eq!(kind(old, &new), ChangeKind::Restage);
    }

    #[test]
    fn reordering_app_env_is_a_restage_but_moving_artefacts_is_not() {
        let bound = fixture("statefulset-1-bound-upsi.json");
        let old = template_of(&bound);
        let mut swapped = old.clone();
        let env = swapped
            .pointer_mut("/spec/containers/0/env")
            .and_then(Value::as_array_mut)
            .expect("env list");
        env.swap(0, 1);
        assert_eq!(kind(old, &swapped), ChangeKind::Restage);
        let mut moved = old.clone();
        let env = moved
            .pointer_mut("/spec/containers/0/env")
            .and_then(Value::as_array_mut)
            .expect("env list");
        let root = env.pop().expect("SERVICE_BINDING_ROOT");
        env.insert(0, root);
        assert_eq!(kind(old, &moved), ChangeKind::BindingOnly);
    }

    #[test]
    fn unbinding_the_last_binding_keeps_the_root_env_and_is_not_a_wipe() {
        let bound = fixture("statefulset-1-bound-upsi.json");
        let mut unbound = bound.clone();
        let t = unbound.pointer_mut("/spec/template").expect("template");
        remove(t, "/spec/volumes");
        remove(t, "/spec/containers/0/volumeMounts");
        let annotations = t
            .pointer_mut("/metadata/annotations")
            .and_then(Value::as_object_mut)
            .expect("annotations");
        annotations.retain(|k, _| !k.starts_with("projector.servicebinding.io/"));
        let change = classify(
            template_of(&bound),
            template_of(&unbound),
            &ArtefactRules::default(),
        );
        assert_eq!(change.kind, ChangeKind::BindingOnly);
        assert_eq!(
            change.delta.removed,
            ["d41d8cd9-8f00-4b20-9e80-0998ecf8427e"]
        );
    }

    #[test]
    fn rotated_credentials_are_a_changed_binding() {
        let bound = fixture("statefulset-2-rebound-managed.json");
        let mut rotated = bound.clone();
        let t = rotated.pointer_mut("/spec/template").expect("template");
        set(
            t,
            "/spec/volumes/0/projected/sources/0/secret/name",
            json!("orders-db-rotated"),
        );
        set(
            t,
            "/metadata/annotations/projector.servicebinding.io~1secret-8e7d6c5b-4a39-4281-9f0e-1d2c3b4a5968",
            json!("orders-db-rotated"),
        );
        let change = classify(
            template_of(&bound),
            template_of(&rotated),
            &ArtefactRules::default(),
        );
        assert_eq!(change.kind, ChangeKind::BindingOnly);
        assert_eq!(change.delta.changed, ["orders-db"]);
        assert!(change.delta.added.is_empty() && change.delta.removed.is_empty());
    }

    #[test]
    fn extra_prefixes_from_settings_count_as_artefacts() {
        let old = json!({"metadata": {}, "spec": {"containers": [{"name": "app"}]}});
        let new = json!({"metadata": {"annotations": {"bindings.acme.example/db": "x"}},
            "spec": {"containers": [{"name": "app", "volumeMounts": [
                {"name": "acme-db", "mountPath": "/acme/db"}]}],
                "volumes": [{"name": "acme-db", "secret": {"secretName": "db"}}]}});
        assert_eq!(kind(&old, &new), ChangeKind::Restage);
        let rules = ArtefactRules {
            extra_volume_prefixes: vec!["acme-".into()],
            extra_annotation_prefixes: vec!["bindings.acme.example/".into()],
        };
        let change = classify(&old, &new, &rules);
        assert_eq!(change.kind, ChangeKind::BindingOnly);
        assert_eq!(change.delta.added, ["db"]);
    }

    #[test]
    fn garbage_shapes_compare_as_raw_json() {
        let old = json!({"spec": {"volumes": "weird", "containers": 3}});
        let new = json!({"spec": {"volumes": "weird", "containers": 4}});
        assert_eq!(kind(&old, &new), ChangeKind::Restage);
        let new = json!({"spec": {"volumes": [], "containers": 3}});
        assert_eq!(kind(&old, &new), ChangeKind::Restage);
    }
}
