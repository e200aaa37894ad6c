//! How two pod templates compare: [`compare`], the comparison the policy makes, which answers
//! as `classify.rs`'s full comparison does, taking a short cut where it can. `classify.rs` is
//! the full walk it falls back to. The reference the policy's answers are checked against,
//! which strips the artefacts into copies and compares those, is `reference_classify` in
//! `src/oracle.rs`.
//!
//! The short cut: a bind, told from what it inserted. A servicebinding.io projector binds by inserting: a
//! volume, a mount and perhaps `SERVICE_BINDING_ROOT` into each container, annotations. When
//! the new template is the old one with only binding artefacts inserted into those lists and
//! maps, `classify` can only answer "binding-only" (with the bindings added or changed), and
//! that answer is worked out here from the inserted elements, the new template's volumes, and
//! the mounts and roots that name its bindings, without reading the old template's elements
//! or the new one's other env vars (most of a template with many bindings). Anything else goes
//! to `classify`.
//!
//! Why the answer is the same, given that the old template is the new one without the
//! inserted elements (equal as JSON text, so as JSON) and every inserted element is an
//! artefact:
//! - every artefact of the old template is in the new one, so the recognisers built from the
//!   new template alone are the ones built from both;
//! - the templates differ, and with the artefacts left out they are equal: the elements both
//!   have are recognised alike on both sides, and every inserted one is left out;
//! - the new template has an artefact (an inserted one), so nothing was emptied or wiped;
//! - every secret the old template projects, the new one still does: nothing dropped;
//! - a binding volume both have keeps its binding name when no inserted mount names it and
//!   no container's root changes (checked below), so the old bindings are the new template's
//!   bindings of the volumes both have.

use std::ops::Range;

use crate::template::artefacts::{
    bindings_by_name, is_projector_root, ArtefactRules, Artefacts, SERVICE_BINDING_ROOT,
};
use crate::template::classify::{
    classify, delta_between, fields_equal_in, is_list_or_nothing, is_map_or_nothing, BindingDelta,
    Change, ChangeKind, CONTAINER_APART, METADATA_APART, POD_SPEC_APART, TEMPLATE_APART,
};
use crate::view::{items, name_of};
use raw::Tree;

/// How two pod templates read from a request differ: `classify`'s answer.
pub fn compare<T: Tree>(old: &T, new: &T, rules: &ArtefactRules) -> Change {
    // A change that inserts something removes nothing: the other way round is looked at only
    // where nothing was inserted.
    let told = match inserted(old, new) {
        Some(added) => bind(&added, new, rules),
        None => inserted(new, old).and_then(|removed| unbind(&removed, old, new, rules)),
    };
    told.unwrap_or_else(|| classify(old, new, rules))
}

/// What the new template inserted into the old one.
struct Inserted<'t, T> {
    /// Where in the larger template's `spec.volumes` (the new one's for a bind, the old one's
    /// for an unbind).
    volumes: Range<usize>,
    env: Vec<&'t T>,
    mounts: Vec<&'t T>,
    annotations: Vec<(&'t str, &'t T)>,
}

impl<T> Default for Inserted<'_, T> {
    fn default() -> Self {
        Inserted {
            volumes: 0..0,
            env: Vec::new(),
            mounts: Vec::new(),
            annotations: Vec::new(),
        }
    }
}

impl<T> Inserted<'_, T> {
    fn is_empty(&self) -> bool {
        self.volumes.is_empty()
            && self.env.is_empty()
            && self.mounts.is_empty()
            && self.annotations.is_empty()
    }
}

/// `classify`'s answer when the new template is the old one with `inserted`, and that is
/// only binding artefacts; `None` otherwise.
fn bind<'t, T: Tree>(
    inserted: &Inserted<'t, T>,
    new: &'t T,
    rules: &'t ArtefactRules,
) -> Option<Change> {
    let (artefacts, _) = artefacts_only(inserted, new, rules)?;
    let (named, kept) = bindings(&artefacts, new, inserted)?;
    Some(Change {
        kind: ChangeKind::BindingOnly,
        emptied: false,
        delta: delta_between(bindings_by_name(kept), bindings_by_name(named)),
        dropped_secrets: Vec::new(),
    })
}

/// `classify`'s answer when the old template is the new one with `removed` (an unbind, or a
/// controller's write of its own template), and that is only binding artefacts; `None`
/// otherwise. The mirror of `bind`:
/// - the recognisers of the old template alone are those of both;
/// - the old template has an artefact (a removed one); the new one, if it has any;
/// - the old template has the projector's root if a removed env var is the root, or if the new
///   one has it (its env vars are the old one's, less the removed ones);
/// - the dropped secrets are those the removed elements name and the new template does not.
fn unbind<'t, T: Tree>(
    removed: &Inserted<'t, T>,
    old: &'t T,
    new: &'t T,
    rules: &'t ArtefactRules,
) -> Option<Change> {
    let (artefacts, volumes) = artefacts_only(removed, old, rules)?;
    let emptied = !artefacts.present_in(new);
    let had_root =
        removed.env.iter().any(|e| is_projector_root(*e)) || artefacts.has_projector_root(new);
    if emptied && had_root {
        return Some(Change {
            kind: ChangeKind::Wipe,
            emptied: false,
            delta: BindingDelta::default(),
            dropped_secrets: Vec::new(),
        });
    }
    let (named, kept) = bindings(&artefacts, old, removed)?;
    let kept_secrets = artefacts.secrets_in(new);
    let removed_secrets = artefacts.secrets_named(
        removed.annotations.iter().copied(),
        volumes.iter(),
        removed.env.iter().copied(),
    );
    Some(Change {
        kind: ChangeKind::BindingOnly,
        emptied,
        delta: delta_between(bindings_by_name(named), bindings_by_name(kept)),
        dropped_secrets: removed_secrets
            .into_iter()
            .filter(|s| !kept_secrets.contains(s))
            .map(str::to_string)
            .collect(),
    })
}

/// The recognisers of the larger template and the volumes among `extra` (what it has on top
/// of the smaller one), when `extra` has elements and every one is an artefact.
fn artefacts_only<'t, T: Tree>(
    extra: &Inserted<'t, T>,
    larger: &'t T,
    rules: &'t ArtefactRules,
) -> Option<(Artefacts<'t>, &'t [T])> {
    if extra.is_empty() {
        return None;
    }
    let volumes = &list(larger.get("spec").and_then(|s| s.get("volumes")))?[extra.volumes.clone()];
    let artefacts = Artefacts::for_templates(rules, &[larger]);
    let only_artefacts = extra
        .annotations
        .iter()
        .all(|(k, _)| artefacts.is_annotation(k))
        && volumes.iter().all(|v| artefacts.is_volume(v))
        && extra.env.iter().all(|e| artefacts.is_env(*e))
        && extra.mounts.iter().all(|m| artefacts.is_mount(*m));
    only_artefacts.then_some((artefacts, volumes))
}

/// Bindings, each as (binding name, volume).
type Named<'t, T> = Vec<(&'t str, &'t T)>;

/// The larger template's bindings: all of them, and those of the volumes both templates have.
/// `None` when a binding both have may be named otherwise in the smaller one: a mount of it,
/// or a root, is among the extra elements.
fn bindings<'t, T: Tree>(
    artefacts: &Artefacts<'t>,
    larger: &'t T,
    extra: &Inserted<'t, T>,
) -> Option<(Named<'t, T>, Named<'t, T>)> {
    let named = artefacts.named_volumes(larger);
    let kept: Named<T> = named
        .iter()
        .filter(|(i, _, _)| !extra.volumes.contains(i))
        .map(|(_, n, v)| (*n, *v))
        .collect();
    let renamed = extra
        .mounts
        .iter()
        .filter_map(|m| name_of(*m))
        .any(|m| kept.iter().any(|(_, v)| name_of(*v) == Some(m)));
    let root = extra
        .env
        .iter()
        .any(|e| name_of(*e) == Some(SERVICE_BINDING_ROOT));
    if renamed || (root && !kept.is_empty()) {
        return None;
    }
    let named = named.into_iter().map(|(_, n, v)| (n, v)).collect();
    Some((named, kept))
}

/// The elements `new` inserted, where the templates are equal apart from elements inserted
/// into the lists and maps binding recognition reads; `None` otherwise.
fn inserted<'t, T: Tree>(old: &'t T, new: &'t T) -> Option<Inserted<'t, T>> {
    let mut inserted = Inserted::default();
    apart(old, new, TEMPLATE_APART)?;
    let (old_meta, new_meta) = (old.get("metadata")?, new.get("metadata")?);
    let (old_spec, new_spec) = (old.get("spec")?, new.get("spec")?);
    apart(old_meta, new_meta, METADATA_APART)?;
    inserted.annotations = added_members(old_meta.get("annotations"), new_meta.get("annotations"))?;
    apart(old_spec, new_spec, POD_SPEC_APART)?;
    let (at, volumes) = added(old_spec.get("volumes"), new_spec.get("volumes"))?;
    inserted.volumes = at..at + volumes.len();
    for key in ["initContainers", "containers"] {
        let (old_list, new_list) = (list(old_spec.get(key))?, list(new_spec.get(key))?);
        if old_list.len() != new_list.len() {
            return None;
        }
        for (a, b) in old_list.iter().zip(new_list) {
            apart(a, b, CONTAINER_APART)?;
            inserted.env.extend(added(a.get("env"), b.get("env"))?.1);
            inserted
                .mounts
                .extend(added(a.get("volumeMounts"), b.get("volumeMounts"))?.1);
        }
    }
    Some(inserted)
}

/// Both are objects, equal as JSON apart from the `special` members.
fn apart<T: Tree>(a: &T, b: &T, special: &[&str]) -> Option<()> {
    (a.is_object() && b.is_object() && fields_equal_in(a, b, special)).then_some(())
}

/// A list's elements; absent or null is an empty list, as for `classify`.
fn list<T: Tree>(v: Option<&T>) -> Option<&[T]> {
    is_list_or_nothing(v).then(|| items(v).as_slice())
}

/// Where `new` is `old` with elements inserted in one place (the elements both have compared
/// as text), that place and the inserted elements.
fn added<'t, T: Tree>(old: Option<&'t T>, new: Option<&'t T>) -> Option<(usize, &'t [T])> {
    let (old, new) = (list(old)?, list(new)?);
    let prefix = old
        .iter()
        .zip(new)
        .take_while(|(a, b)| a.identical(b))
        .count();
    let rest = &old[prefix..];
    let suffix = rest
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a.identical(b))
        .count();
    (suffix == rest.len()).then(|| (prefix, &new[prefix..new.len() - suffix]))
}

/// The members `new` adds to `old` (maps; absent or null is empty) when it changes none of
/// `old`'s.
fn added_members<'t, T: Tree>(
    old: Option<&T>,
    new: Option<&'t T>,
) -> Option<Vec<(&'t str, &'t T)>> {
    if !is_map_or_nothing(old) || !is_map_or_nothing(new) {
        return None;
    }
    let mut old = old.into_iter().flat_map(T::members).peekable();
    let mut keys = Vec::new();
    for (key, value) in new.into_iter().flat_map(T::members) {
        match old.peek() {
            Some((k, v)) if *k == key => {
                if *v != value {
                    return None;
                }
                old.next();
            }
            _ => keys.push((key, value)),
        }
    }
    old.next().is_none().then_some(keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::artefacts::TEMPLATE_SHAPE;
    use crate::template::fixtures::{fixture, read, template_of};
    use raw::Node;
    use serde_json::{json, Value};

    type Teller = for<'a> fn(&Node<'a>, &Node<'a>, &ArtefactRules) -> Option<Change>;

    /// `bind`'s answer, checked against `classify` on the whole trees.
    fn told(old: &Value, new: &Value) -> Option<Change> {
        told_by(
            |old, new, rules| bind(&inserted(old, new)?, new, rules),
            old,
            new,
        )
    }

    /// `unbind`'s answer, checked against `classify` on the whole trees.
    fn told_unbind(old: &Value, new: &Value) -> Option<Change> {
        let teller: Teller = |old, new, rules| unbind(&inserted(new, old)?, old, new, rules);
        told_by(teller, old, new)
    }

    /// The answer of `teller`, checked against `classify` on the whole trees.
    fn told_by(teller: Teller, old: &Value, new: &Value) -> Option<Change> {
        let rules = ArtefactRules::default();
        let (a, b) = (old.to_string(), new.to_string());
        let (a, b) = (
            Node::template(&a, &TEMPLATE_SHAPE).expect("JSON"),
            Node::template(&b, &TEMPLATE_SHAPE).expect("JSON"),
        );
        let answer = teller(&a, &b, &rules);
        if let Some(change) = &answer {
            assert_eq!(change, &classify(old, new, &rules));
        }
        answer
    }

    #[test]
    fn a_bind_is_told_from_what_it_inserted() {
        let unbound = fixture("statefulset-0-unbound.json");
        let bound = fixture("statefulset-1-bound-upsi.json");
        let bind = told(template_of(&unbound), template_of(&bound)).expect("an insertion");
        assert_eq!(bind.kind, ChangeKind::BindingOnly);
        assert_eq!(bind.delta.added, ["d41d8cd9-8f00-4b20-9e80-0998ecf8427e"]);
    }

    #[test]
    fn an_unbind_is_told_from_what_it_removed() {
        // The second bind of e2e-tests/requests/, the other way round.
        let second_bind = read("requests/02-second-bind-while-held.json");
        let (bound, both) = (
            &second_bind["request"]["oldObject"],
            &second_bind["request"]["object"],
        );
        let unbind_change = told_unbind(template_of(both), template_of(bound)).expect("a removal");
        assert_eq!(unbind_change.kind, ChangeKind::BindingOnly);
        assert_eq!(unbind_change.delta.removed, ["orders-db"]);
        assert_eq!(
            unbind_change.dropped_secrets,
            ["e3b0c442-98fc-4c14-9afb-f4c8996fb924-sbio"]
        );
        // Without the projector's root, which no unbind removes: a controller's own template.
        let unbound = fixture("statefulset-0-unbound.json");
        let wipe = told_unbind(template_of(both), template_of(&unbound));
        assert_eq!(wipe.map(|c| c.kind), Some(ChangeKind::Wipe));
    }

    #[test]
    fn a_root_spelled_with_an_escape_still_names_the_binding() {
        let uid = "3f9c2b7e-1d4a-4e8b-9c6f-0a1b2c3d4e5f";
        let template = |volumes: &str, mounts: &str| {
            format!(
                r#"{{"metadata": {{}}, "spec": {{"volumes": [{volumes}], "containers": [{{"name": "app",
                "env": [{{"name": "SERVICE_BINDING_ROO\u0054", "value": "/b"}}],
                "volumeMounts": [{mounts}]}}]}}}}"#
            )
        };
        let old = template("", "");
        let new = template(
            &format!(r#"{{"name": "servicebinding-{uid}", "projected": {{"sources": []}}}}"#),
            &format!(r#"{{"name": "servicebinding-{uid}", "mountPath": "/b/orders/db"}}"#),
        );
        let rules = ArtefactRules::default();
        let (a, b) = (
            Node::template(&old, &TEMPLATE_SHAPE).expect("JSON"),
            Node::template(&new, &TEMPLATE_SHAPE).expect("JSON"),
        );
        let change = bind(&inserted(&a, &b).expect("an insertion"), &b, &rules).expect("a bind");
        assert_eq!(change.delta.added, ["orders/db"]);
        let tree = |t: &str| serde_json::from_str::<Value>(t).expect("JSON");
        assert_eq!(change, classify(&tree(&old), &tree(&new), &rules));
    }

    #[test]
    fn anything_but_inserted_artefacts_goes_to_classify() {
        let unbound = fixture("statefulset-0-unbound.json");
        let bound = fixture("statefulset-1-bound-upsi.json");
        let (unbound, bound) = (template_of(&unbound), template_of(&bound));
        // An unbind removes.
        assert_eq!(told(bound, unbound), None);
        // Inserted, but the app's own.
        let mut app_env = bound.clone();
        app_env["spec"]["containers"][0]["env"]
            .as_array_mut()
            .expect("env")
            .push(json!({"name": "A", "value": "1"}));
        assert_eq!(told(unbound, &app_env), None);
        // Nothing inserted, something changed.
        let mut image = unbound.clone();
        image["spec"]["containers"][0]["image"] = json!("app:2");
        assert_eq!(told(unbound, &image), None);
        assert_eq!(told(unbound, unbound), None);
    }

    #[test]
    fn a_mount_inserted_for_a_binding_both_have_goes_to_classify() {
        // It may give that binding another name.
        let bound = fixture("statefulset-1-bound-upsi.json");
        let bound = template_of(&bound);
        let volume = bound["spec"]["volumes"]
            .as_array()
            .and_then(|v| v.iter().find(|v| v.get("projected").is_some()))
            .and_then(|v| v["name"].as_str())
            .expect("a binding volume");
        let mut remounted = bound.clone();
        remounted["spec"]["containers"][0]["volumeMounts"]
            .as_array_mut()
            .expect("mounts")
            .insert(0, json!({"name": volume, "mountPath": "/bindings/renamed"}));
        assert_eq!(told(bound, &remounted), None);
    }
}
