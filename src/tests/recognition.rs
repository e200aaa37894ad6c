//! Projections are recognised by their exact shape: look-alikes of the app's own are restage
//! changes in every mode, and true projections stay binding changes whatever root the app
//! declares.

use serde_json::{json, Value};

use super::projector::{project, unproject, Binding};
use super::{
    annotation, bound, check, held, orders_db, push, set, template_of, unbound, update, upsi, with,
    Expect, EARLIER,
};
use crate::markers::{HELD_SINCE_ANNOTATION, ORIGINAL_STRATEGY_ANNOTATION, PENDING_ANNOTATION};
use crate::template::artefacts::ArtefactRules;
use crate::template::classify::{classify, ChangeKind};
use crate::workload::StatefulSet;

const UID: &str = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d";
const ROOT_ENV: &str = "/spec/template/spec/containers/0/env";

fn kind(old: &Value, new: &Value) -> ChangeKind {
    classify(
        template_of(old),
        template_of(new),
        &ArtefactRules::default(),
    )
    .kind
}

fn own_root(root: Value) -> impl FnOnce(&mut Value) {
    move |s: &mut Value| push(s, ROOT_ENV, root)
}

/// An app that declares its own `SERVICE_BINDING_ROOT`, bound to `upsi` under that root.
fn app_with_root(root: &str) -> (Value, Value) {
    let unbound = with(
        unbound(),
        own_root(json!({"name": "SERVICE_BINDING_ROOT", "value": root})),
    );
    let bound = with(unbound.clone(), |s| project(s, &upsi()));
    (unbound, bound)
}

#[test]
fn an_apps_own_root_changed_added_or_removed_is_a_restage() {
    let (unbound_own, bound_own) = app_with_root("/etc/svc");
    let changed = with(bound_own.clone(), |s| {
        set(s, &format!("{ROOT_ENV}/0/value"), json!("/srv/bindings"))
    });
    let from_config = with(bound(), |s| {
        let env = s
            .pointer_mut(ROOT_ENV)
            .and_then(Value::as_array_mut)
            .expect("env");
        env.retain(|e| e["name"] != "SERVICE_BINDING_ROOT");
        env.push(json!({"name": "SERVICE_BINDING_ROOT",
            "valueFrom": {"configMapKeyRef": {"name": "app", "key": "root"}}}));
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

/// Volumes of the app's own that only look like binding volumes, added to a bound app.
fn lookalike_volumes() -> Vec<(&'static str, Value)> {
    vec![
        (
            "servicebinding-overrides",
            json!({"name": "servicebinding-overrides", "projected": {"sources": [{"configMap": {"name": "overrides"}}]}}),
        ),
        (
            "servicebinding-<uid> as a configMap",
            json!({"name": format!("servicebinding-{UID}"), "configMap": {"name": "settings"}}),
        ),
        (
            "binding-<40 hex> as a secret",
            json!({"name": "binding-0123456789abcdef0123456789abcdef01234567", "secret": {"secretName": "s"}}),
        ),
    ]
}

fn with_lookalike(sts: Value, volume: &Value) -> Value {
    with(sts, |s| {
        push(s, "/spec/template/spec/volumes", volume.clone());
        push(
            s,
            "/spec/template/spec/containers/0/volumeMounts",
            json!({"name": volume["name"], "mountPath": "/bindings/overrides"}),
        );
    })
}

#[test]
fn a_lookalike_volume_is_the_apps_own_in_every_mode() {
    for (name, volume) in lookalike_volumes() {
        let old = bound();
        let new = with_lookalike(old.clone(), &volume);
        assert_eq!(kind(&old, &new), ChangeKind::Restage, "{name}");
        check(
            &format!("defer: {name}"),
            &update(old.clone(), new.clone()),
            Expect::Plain,
        );
        let reject = update(old, new).settings(json!({"mode": "reject"}));
        check(&format!("reject: {name}"), &reject, Expect::Plain);
        let held_old = held(bound(), &StatefulSet, "+x");
        let held_new = with_lookalike(held_old.clone(), &volume);
        let r = update(held_old, held_new).run();
        let decision = r.audit_annotations.as_ref().and_then(|a| a.get("decision"));
        assert_eq!(
            decision.map(String::as_str),
            Some("released"),
            "held: {name}"
        );
    }
}

/// The VMware implementation: a `binding-<sha1>` projected volume, its secret recorded only on
/// the workload, and `spec.env` mappings to that secret.
fn vmware_bind(sts: &Value) -> Value {
    let digest = "4b2c350fb984fc36b6cf39515a2efced0fcb5053";
    let volume = format!("binding-{digest}");
    with(sts.clone(), |s| {
        set(
            s,
            &format!(
                "/metadata/annotations/internal.bindings.labs.vmware.com~1projection-{digest}"
            ),
            json!("legacy-db-secret"),
        );
        let t = &mut s["spec"]["template"];
        push(
            t,
            "/spec/volumes",
            json!({"name": volume,
            "projected": {"sources": [{"secret": {"name": "legacy-db-secret"}}]}}),
        );
        push(
            t,
            "/spec/containers/0/volumeMounts",
            json!({"name": volume, "mountPath": "/bindings/legacy-db", "readOnly": true}),
        );
        push(
            t,
            "/spec/containers/0/env",
            json!({"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}),
        );
        push(
            t,
            "/spec/containers/0/env",
            json!({"name": "DATABASE_URL",
            "valueFrom": {"secretKeyRef": {"name": "legacy-db-secret", "key": "uri"}}}),
        );
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
    let old = held(both, &StatefulSet, "+upsi +orders-db");
    // the runner's desired state: the app's own root stays, every projection goes
    let overwrite = with(old.clone(), |s| {
        s["spec"] = unbound_own["spec"].clone();
        s["metadata"]["labels"] = unbound_own["metadata"]["labels"].clone();
        s["metadata"]["annotations"] = unbound_own["metadata"]["annotations"].clone();
    });
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
