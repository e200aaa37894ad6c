//! Projections are recognised by their exact shape: look-alikes of the app's own are restage
//! changes in every mode, and true projections stay binding changes whatever root the app
//! declares.

use serde_json::{json, Value};

use restage_gate_testkit::korifi::runner_write;
use restage_gate_testkit::lookalike::{self, change_root, declare_root};
use restage_gate_testkit::projector::{project, project_vmware, unproject, Binding};
use restage_gate_testkit::secret_volume;

use super::{
    annotation, bound, check, held, orders_db, push, set, template_of, unbound, update, upsi, with,
    Expect, EARLIER,
};
use crate::markers::{HELD_SINCE_ANNOTATION, PENDING_ANNOTATION};
use crate::settings::Settings;
use crate::template::artefacts::{containers, ArtefactRules, Artefacts, TEMPLATE_SHAPE};
use crate::template::classify::{classify, ChangeKind};
use crate::view::{at, items};
use crate::workload::ORIGINAL_STRATEGY_ANNOTATION;
use raw::{Node, Tree};

const UID: &str = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d";

fn kind(old: &Value, new: &Value) -> ChangeKind {
    classify(
        template_of(old),
        template_of(new),
        &ArtefactRules::default(),
    )
    .kind
}

/// An app that declares its own `SERVICE_BINDING_ROOT`, bound to `upsi` under that root.
fn app_with_root(root: &str) -> (Value, Value) {
    let unbound = with(unbound(), |s| declare_root(s, root));
    let bound = with(unbound.clone(), |s| project(s, &upsi()));
    (unbound, bound)
}

#[test]
fn an_apps_own_root_changed_added_or_removed_is_a_restage() {
    let (unbound_own, bound_own) = app_with_root("/etc/svc");
    let changed = with(bound_own.clone(), |s| {
        change_root(
            s,
            Some(json!({"name": "SERVICE_BINDING_ROOT", "value": "/srv/bindings"})),
        )
    });
    let from_config = with(bound(), |s| {
        change_root(
            s,
            Some(json!({"name": "SERVICE_BINDING_ROOT",
                "valueFrom": {"configMapKeyRef": {"name": "app", "key": "root"}}})),
        )
    });
    let cases = [
        ("own root changed", bound_own.clone(), changed),
        ("own root added", unbound(), unbound_own.clone()),
        ("own root removed", unbound_own, unbound()),
        ("root read from a config map", bound(), from_config),
    ];
    for (name, old, new) in cases {
        assert_eq!(kind(&old, &new), ChangeKind::Restage, "{name}");
        check(name, &update(old, new), Expect::Plain);
    }
}

#[test]
fn a_bind_under_an_apps_own_root_is_held_and_named_relative_to_it() {
    let (unbound_own, bound_own) = app_with_root("/etc/svc/");
    let mount = bound_own
        .pointer("/spec/template/spec/containers/0/volumeMounts/0/mountPath")
        .and_then(Value::as_str);
    assert_eq!(mount, Some(&*format!("/etc/svc/{}", upsi().name)));
    let r = update(unbound_own, bound_own).run();
    let sts = r.mutated_object.expect("held");
    assert_eq!(
        annotation(&sts, PENDING_ANNOTATION),
        Some(&*format!("+{}", upsi().name))
    );
}

#[test]
fn the_last_unbind_while_the_app_declares_its_own_root_is_a_binding_change() {
    let (unbound_own, bound_own) = app_with_root("/etc/svc");
    let unbind = with(bound_own.clone(), |s| unproject(s, &upsi().uid, true));
    assert_eq!(template_of(&unbind), template_of(&unbound_own));
    assert_eq!(kind(&bound_own, &unbind), ChangeKind::BindingOnly);
    let r = update(bound_own, unbind).run();
    let sts = r.mutated_object.expect("held");
    assert_eq!(
        annotation(&sts, PENDING_ANNOTATION),
        Some(&*format!("-{}", upsi().name))
    );
}

#[test]
fn a_lookalike_volume_is_the_apps_own_in_every_mode() {
    for (name, volume) in lookalike::volumes() {
        let old = bound();
        let new = with(old.clone(), |s| lookalike::mount(s, &volume));
        assert_eq!(kind(&old, &new), ChangeKind::Restage, "{name}");
        check(
            &format!("defer: {name}"),
            &update(old.clone(), new.clone()),
            Expect::Plain,
        );
        let reject = update(old, new).settings(json!({"mode": "reject"}));
        check(&format!("reject: {name}"), &reject, Expect::Plain);
        let held_old = held(bound(), "+x");
        let held_new = with(held_old.clone(), |s| lookalike::mount(s, &volume));
        let r = update(held_old, held_new).run();
        let decision = r.audit_annotations.as_ref().and_then(|a| a.get("decision"));
        assert_eq!(
            decision.map(String::as_str),
            Some("released"),
            "held: {name}"
        );
    }
}

/// A VMware bind of `legacy-db` with an env mapping to its secret.
fn vmware_bind(sts: &Value) -> Value {
    let mut binding = Binding::new("", "legacy-db", "legacy-db-secret");
    binding.env = vec![("DATABASE_URL".into(), "uri".into())];
    with(sts.clone(), |s| {
        project_vmware(s, "4b2c350fb984fc36b6cf39515a2efced0fcb5053", &binding)
    })
}

#[test]
fn a_vmware_bind_with_env_mappings_is_held_and_refused_in_reject_mode() {
    let new = vmware_bind(&unbound());
    assert_eq!(kind(&unbound(), &new), ChangeKind::BindingOnly);
    let r = update(unbound(), new.clone()).run();
    let sts = r.mutated_object.expect("held");
    assert_eq!(annotation(&sts, PENDING_ANNOTATION), Some("+legacy-db"));
    let reject = update(unbound(), new).settings(json!({"mode": "reject"}));
    check("reject", &reject, Expect::Rejected);
}

#[test]
fn a_controller_overwrite_of_a_held_app_with_its_own_root_keeps_every_marker() {
    let (unbound_own, bound_own) = app_with_root("/etc/svc");
    let both = with(bound_own, |s| project(s, &orders_db()));
    let old = held(both, "+upsi +orders-db");
    // the runner's desired state: the app's own root stays, every projection goes
    let overwrite = runner_write(&old, &unbound_own);
    let change = classify(
        template_of(&old),
        template_of(&overwrite),
        &ArtefactRules::default(),
    );
    assert!(change.emptied, "the template alone cannot tell");
    let r = update(old.clone(), overwrite.clone()).run();
    let sts = r.mutated_object.expect("hold re-applied");
    for key in [
        ORIGINAL_STRATEGY_ANNOTATION,
        HELD_SINCE_ANNOTATION,
        PENDING_ANNOTATION,
    ] {
        assert_eq!(annotation(&sts, key), annotation(&old, key), "{key}");
    }
    assert_eq!(annotation(&sts, HELD_SINCE_ANNOTATION), Some(EARLIER));
    // the next identical write stores the same object
    let again = update(old, overwrite)
        .run()
        .mutated_object
        .expect("hold re-applied");
    assert_eq!(again, sts);
}

#[test]
fn annotations_that_only_share_the_projectors_prefix_are_the_apps_own() {
    let old = bound();
    let new = with(old.clone(), |s| {
        set(
            s,
            "/spec/template/metadata/annotations/projector.servicebinding.io~1owner",
            json!("team-a"),
        )
    });
    assert_eq!(kind(&old, &new), ChangeKind::Restage);
    let binding = Binding::new(UID, "cache", "cache-secret");
    let bound_twice = with(old.clone(), |s| project(s, &binding));
    assert_eq!(kind(&old, &bound_twice), ChangeKind::BindingOnly);
}

/// What recognition says of every part of a template: each volume, env var, mount and
/// annotation, the bindings by name, the secrets, and the template as a whole.
fn recognised<T: Tree>(rules: &ArtefactRules, template: &T) -> String {
    let artefacts = Artefacts::for_templates(rules, &[template]);
    let volumes: Vec<bool> = items(at(template, &["spec", "volumes"]))
        .map(|v| artefacts.is_volume(v))
        .collect();
    let (mut envs, mut mounts) = (Vec::new(), Vec::new());
    for container in containers(template) {
        envs.extend(items(container.get("env")).map(|e| artefacts.is_env(e)));
        mounts.extend(items(container.get("volumeMounts")).map(|m| artefacts.is_mount(m)));
    }
    let annotations: Vec<(&str, bool)> = at(template, &["metadata", "annotations"])
        .into_iter()
        .flat_map(|a| a.members())
        .map(|(key, _)| (key, artefacts.is_annotation(key)))
        .collect();
    let bindings: Vec<String> = artefacts.bindings(template).into_keys().collect();
    format!(
        "present {} root {} secrets {:?} bindings {bindings:?} volumes {volumes:?} \
         env {envs:?} mounts {mounts:?} annotations {annotations:?}",
        artefacts.present_in(template),
        artefacts.has_projector_root(template),
        artefacts.secrets_in(template),
    )
}

#[test]
fn recognition_sees_the_same_in_a_template_read_to_its_shape_as_in_its_tree() {
    // servicebinding/runtime's artefacts (in an init container too), VMware's, a volume of
    // `extraVolumePrefixes`, env mappings, the app's look-alikes, and members of each that
    // recognition never looks at.
    let mut db = orders_db();
    db.env.push(("DB_TYPE".into(), "type".into()));
    let migrate = json!({"name": "migrate", "image": "migrate:1"});
    let sts = with(bound(), |s| {
        push(s, "/spec/template/spec/initContainers", migrate)
    });
    let mut sts = vmware_bind(&with(sts, |s| project(s, &db)));
    for (_, volume) in lookalike::volumes() {
        lookalike::mount(&mut sts, &volume);
    }
    let sts = secret_volume::attach(sts, "cache", "cache-secret");
    let sts = with(sts, |s| {
        push(
            s,
            "/spec/template/spec/containers/0/env",
            json!({"name": "POD",
            "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}),
        );
    });
    let rules = Settings::from_value(&secret_volume::settings("defer"))
        .expect("settings")
        .artefacts;
    let tree = template_of(&sts);
    let text = tree.to_string();
    let read = Node::template(&text, &TEMPLATE_SHAPE).expect("JSON");
    let seen = recognised(&rules, tree);
    assert!(seen.contains("cache-secret"), "{seen}");
    assert_eq!(recognised(&rules, &read), seen);
}
