//! Every kind the policy holds, on fixtures modelled on what the servicebinding.io projector
//! writes into them: the decision table (docs/design.md §4), each row on every kind (what
//! Korifi's statefulset-runner writes is in `validate.rs`); each kind's own hold and release,
//! how each tells a rollout under way, and the rules that keep new pods off deleted binding
//! secrets.

use serde_json::{json, Value};

use restage_gate::workload::kinds;
use restage_gate_testkit::edit;
use restage_gate_testkit::fixtures::{cache_binding, daemonset, deployment, orders_binding};
use restage_gate_testkit::hold::marker_paths;
use restage_gate_testkit::lookup::{every, unbound};
use restage_gate_testkit::projector::{bind, unbind, Binding};

use super::{
    annotation, check, held, hold_paths, holds_unbinds, in_rollout, kind_of, pending_path,
    restarted, update, window_closed, window_open, with, Expect, Request,
};
use restage_gate::markers::{self, PENDING_ANNOTATION};
use restage_gate::workload::{Deployment, Workload, ORIGINAL_PAUSED_ANNOTATION};

fn scaled(object: Value) -> Value {
    with(object, |o| o["spec"]["replicas"] = json!(5))
}

/// `pointer` inside the pod template of `kind`.
fn in_template(kind: &dyn Workload, pointer: &str) -> String {
    edit::pointer(kind.declared().template) + pointer
}

/// A new version of the app: a new image in its pod template (`kubectl set image`, a new
/// droplet).
fn deployed(kind: &dyn Workload, object: Value) -> Value {
    let image = in_template(kind, "/spec/containers/0/image");
    with(object, |o| {
        edit::set(o, &image, json!("registry.example.com/orders@sha256:0002"))
    })
}

/// The decision table over every kind the policy holds: each row's request on the kind's own
/// fixture, and the outcome its declared control implies (a kind held by a pause rolls an
/// unbind now and releases on its owner's resume; one held by its update strategy holds it).
/// What is out of scope (another operation, a subresource, another kind, an object being
/// deleted) is accepted unchanged, and what cannot be read is accepted with a warning.
#[test]
fn every_kind_follows_the_decision_table() {
    use Expect::*;
    for d in every() {
        let kind = d.workload();
        let fixture = || d.fixture();
        let bound = || bind(fixture(), &orders_binding());
        let held_bound = || held(bound(), "+orders-db");
        // The controller has not yet acted on the newest spec.
        let unobserved = || {
            with(fixture(), |o| {
                o["metadata"]["generation"] = json!(2);
                o["status"]["observedGeneration"] = json!(1);
            })
        };
        let stopped = |o: Value| d.stopped_by_owner(o);
        let resumed = |o: Value| with(o, |o| edit::set(o, &d.control_path(), d.default_control()));
        let deployed = |o: Value| deployed(kind, o);
        let future_field = |o: Value| {
            let field = in_template(kind, "/spec/futureField");
            with(o, |o| edit::set(o, &field, json!(true)))
        };
        let reject = || mode("reject");
        let reject_in_window = || with(window_open(), |s| s["mode"] = json!("reject"));
        let hold = || hold_paths(kind);
        let unbinds = |held: Expect| {
            if d.holds_unbinds() {
                held
            } else {
                Noted("rolling")
            }
        };
        let mut cases: Vec<(&str, Request, Expect)> = vec![
            (
                "first bind",
                update(fixture(), bound()),
                Mutated("held", hold()),
            ),
            (
                "unbind",
                update(bound(), unbind(bound(), &orders_binding())),
                unbinds(Mutated("held", hold())),
            ),
            (
                "second bind while held",
                update(held_bound(), bind(held_bound(), &cache_binding())),
                Mutated("held", pending_path()),
            ),
            (
                "no change while held",
                update(held_bound(), held_bound()),
                Noted("held"),
            ),
            ("no change", update(bound(), bound()), Plain),
            ("wipe", update(bound(), fixture()), Plain),
            (
                "rollout restart while held",
                update(held_bound(), with(held_bound(), restarted)),
                Mutated("released", hold()),
            ),
            (
                "rollout restart",
                update(bound(), with(bound(), restarted)),
                Plain,
            ),
            (
                "rolling deploy while held",
                update(held_bound(), deployed(held_bound())),
                Mutated("released", hold()),
            ),
            (
                "unknown pod-spec field",
                update(fixture(), future_field(bound())),
                Plain,
            ),
            (
                "unknown pod-spec field while held",
                update(held_bound(), future_field(held_bound())),
                Mutated("released", hold()),
            ),
            (
                "bind before the controller observed the last spec change",
                update(unobserved(), bind(unobserved(), &orders_binding())),
                Plain,
            ),
            (
                "bind while its owner stopped its rollouts",
                update(stopped(fixture()), stopped(bound())),
                Plain,
            ),
            (
                "bind in a maintenance window",
                update(fixture(), bound()).settings(window_open()),
                Plain,
            ),
            (
                "bind outside maintenance windows",
                update(fixture(), bound()).settings(window_closed()),
                Mutated("held", hold()),
            ),
            (
                "no change while held in a window",
                update(held_bound(), held_bound()).settings(window_open()),
                Mutated("released", hold()),
            ),
            (
                "reject mode bind",
                update(fixture(), bound()).settings(reject()),
                Rejected,
            ),
            (
                "reject mode unbind",
                update(bound(), unbind(bound(), &orders_binding())).settings(reject()),
                Noted("rolling"),
            ),
            (
                "reject mode bind in a window",
                update(fixture(), bound()).settings(reject_in_window()),
                Plain,
            ),
            (
                "reject mode restage",
                update(bound(), deployed(bound())).settings(reject()),
                Plain,
            ),
            (
                "status subresource",
                Request {
                    sub_resource: "status",
                    ..update(fixture(), bound())
                },
                Plain,
            ),
            (
                "scale subresource",
                Request {
                    sub_resource: "scale",
                    ..update(fixture(), bound())
                },
                Plain,
            ),
            (
                "create",
                Request {
                    operation: "CREATE",
                    ..update(Value::Null, bound())
                },
                Plain,
            ),
            (
                "delete",
                Request {
                    operation: "DELETE",
                    ..update(bound(), Value::Null)
                },
                Plain,
            ),
            (
                "connect",
                Request {
                    operation: "CONNECT",
                    ..update(bound(), bound())
                },
                Plain,
            ),
            (
                "object being deleted",
                update(
                    fixture(),
                    with(bound(), |o| {
                        o["metadata"]["deletionTimestamp"] = json!("2026-12-02T16:50:00Z")
                    }),
                ),
                Plain,
            ),
            (
                "malformed object",
                update(fixture(), json!("garbage")),
                Noted("unreadable"),
            ),
            (
                "template not an object",
                update(
                    fixture(),
                    with(bound(), |o| {
                        edit::set(o, &in_template(kind, ""), json!([1]))
                    }),
                ),
                Noted("unreadable"),
            ),
            (
                "labels not an object",
                update(
                    fixture(),
                    with(bound(), |o| o["metadata"]["labels"] = json!("x")),
                ),
                Noted("unreadable"),
            ),
            // a null metadata is not a map the markers can be written into
            (
                "metadata null",
                update(fixture(), with(bound(), |o| o["metadata"] = Value::Null)),
                Noted("unreadable"),
            ),
            (
                "invalid settings",
                update(fixture(), bound()).settings(mode("later")),
                Noted("unreadable"),
            ),
        ];
        // A kind the policy does not hold, with the same objects and API group.
        let others = [
            ("a ReplicaSet", "ReplicaSet"),
            ("a ReplicationController", "ReplicationController"),
            ("a CronJob", "CronJob"),
            ("a Job", "Job"),
        ];
        for (name, other) in others {
            let request = Request {
                kind: other,
                ..update(fixture(), bound())
            };
            cases.push((name, request, Plain));
        }
        if fixture().pointer("/spec/replicas").is_some() {
            cases.extend([
                (
                    "scale while held",
                    update(held_bound(), scaled(held_bound())),
                    Noted("held"),
                ),
                ("scale", update(bound(), scaled(bound())), Plain),
                (
                    "reject mode scale",
                    update(bound(), scaled(bound())).settings(reject()),
                    Plain,
                ),
            ]);
        }
        if !d.holds_unbinds() {
            cases.extend([
                (
                    "unbind while held",
                    update(held_bound(), unbind(held_bound(), &orders_binding())),
                    Mutated("released", hold()),
                ),
                (
                    "its owner's resume while held",
                    update(held_bound(), resumed(held_bound())),
                    Mutated("released", marker_paths(kind)),
                ),
            ]);
        } else {
            cases.push((
                "wipe while held",
                update(held_bound(), fixture()),
                Mutated("held", hold()),
            ));
        }
        for (name, request, expect) in cases {
            check(&format!("{d:?} {name}"), &request, expect);
        }
    }
}

/// A bind while a rollout is under way joins it, as each kind's `status` tells one.
#[test]
fn a_bind_during_a_rollout_rolls_with_it() {
    let rolling = [
        in_rollout(),
        with(daemonset(), |d| {
            d["status"]["updatedNumberScheduled"] = json!(2)
        }),
        with(deployment(), |d| {
            d["status"]["conditions"][1]["reason"] = json!("ReplicaSetUpdated");
        }),
        // Scaled from 3 to 5 after the last template change: two replicas still to update.
        with(deployment(), |d| d["spec"]["replicas"] = json!(5)),
    ];
    for old in rolling {
        let request = update(old.clone(), bind(old, &orders_binding()));
        check("bind during a rollout", &request, Expect::Plain);
    }
}

#[test]
fn a_daemonset_hold_remembers_and_restores_its_own_strategy() {
    let r = update(daemonset(), bind(daemonset(), &orders_binding())).run();
    let held = r.mutated_object.expect("held");
    assert_eq!(held["spec"]["updateStrategy"], json!({"type": "OnDelete"}));
    let restarted_ds = with(held.clone(), restarted);
    let released = update(held, restarted_ds)
        .run()
        .mutated_object
        .expect("released");
    assert_eq!(
        released["spec"]["updateStrategy"],
        daemonset()["spec"]["updateStrategy"]
    );
    assert!(!markers::is_held(&released));
    let message = update(daemonset(), bind(daemonset(), &orders_binding()))
        .settings(json!({"mode": "reject"}))
        .run()
        .message
        .expect("refused");
    assert!(
        message.contains("DaemonSet observability/log-shipper"),
        "{message}"
    );
    assert!(
        message.contains("kubectl rollout restart daemonset/log-shipper -n observability"),
        "{message}"
    );
}

#[test]
fn a_deployment_hold_pauses_it_and_a_release_sets_paused_back() {
    let r = update(deployment(), bind(deployment(), &orders_binding())).run();
    let held = r.mutated_object.expect("held");
    assert_eq!(held["spec"]["paused"], json!(true));
    assert_eq!(annotation(&held, ORIGINAL_PAUSED_ANNOTATION), Some("false"));
    assert_eq!(annotation(&held, PENDING_ANNOTATION), Some("+orders-db"));
    assert!(r.audit_annotations.expect("audit")["apply-now"]
        .contains("kubectl rollout resume deployment/orders-server -n apps"));
    let released = update(held.clone(), with(held, restarted))
        .run()
        .mutated_object
        .expect("released");
    assert_eq!(released["spec"]["paused"], json!(false));
    assert!(!markers::is_held(&released));
}

#[test]
fn a_deployment_change_that_switches_a_binding_secret_rolls_now() {
    let bound = bind(deployment(), &orders_binding());
    let rotated = Binding {
        secret: "orders-db-secret-2".into(),
        ..orders_binding()
    };
    let request = update(bound.clone(), bind(bound, &rotated));
    let r = check("switched secret", &request, Expect::Noted("rolling"));
    let warning = r.warnings.expect("warning").join(" ");
    assert!(
        warning.contains("orders-db-secret") && warning.contains(kind_of(&deployment()).kind()),
        "{warning}"
    );
}

#[test]
fn a_deployment_change_in_place_that_keeps_its_secrets_is_held() {
    let bound = bind(deployment(), &orders_binding());
    let typed = Binding {
        type_: Some("postgresql".into()),
        ..orders_binding()
    };
    let r = check(
        "type added",
        &update(bound.clone(), bind(bound, &typed)),
        Expect::Mutated("held", hold_paths(kind_of(&deployment()))),
    );
    let sts = r.mutated_object.expect("held");
    assert_eq!(annotation(&sts, PENDING_ANNOTATION), Some("~orders-db"));
}

#[test]
fn a_deployment_remembered_paused_is_restored_only_when_valid() {
    let old = with(
        held(bind(deployment(), &orders_binding()), "+orders-db"),
        |d| d["metadata"]["annotations"][ORIGINAL_PAUSED_ANNOTATION] = json!("yes"),
    );
    let r = update(old.clone(), with(old, restarted)).run();
    let reason = r.audit_annotations.expect("audit")["reason"].clone();
    assert!(
        reason.contains("spec.paused yes is not valid for a Deployment"),
        "{reason}"
    );
    assert_eq!(
        r.mutated_object.expect("released")["spec"]["paused"],
        Deployment.declared().control.default()
    );
}

/// The stored object's `status` as the request's reader keeps it (each kind's `status` fields)
/// tells every kind what the whole of it tells: a rollout under way or not, whichever member
/// says so, whatever else the status holds.
#[test]
fn every_kind_reads_a_rollout_from_the_status_members_the_reader_keeps() {
    let caught_up = json!({
        "observedGeneration": 3, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
        "currentRevision": "r1", "updateRevision": "r1", "collisionCount": 0,
        "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberReady": 3,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                "message": "Deployment has minimum availability.", "lastUpdateTime": "2026-11-20T08:13:30Z"},
            {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
                "message": "ReplicaSet \"app-7d9c6b5f4\" has successfully progressed.",
                "lastTransitionTime": "2026-11-20T08:12:44Z"}
        ]
    });
    let rolling: [(&str, Value); 5] = [
        ("/observedGeneration", json!(2)),
        ("/updatedReplicas", json!(1)),
        ("/updateRevision", json!("r2")),
        ("/updatedNumberScheduled", json!(1)),
        ("/conditions/1/reason", json!("ReplicaSetUpdated")),
    ];
    let statuses = std::iter::once(caught_up.clone()).chain(rolling.iter().map(|(path, value)| {
        with(caught_up.clone(), |s| {
            *s.pointer_mut(path).expect("a member") = value.clone()
        })
    }));
    for workload in restage_gate::workload::kinds() {
        let kind = workload.kind();
        let mut answers = Vec::new();
        for status in statuses.clone() {
            let old = json!({"metadata": {"generation": 3},
                "spec": {"replicas": 3, "updateStrategy": {"type": "RollingUpdate"}, "paused": false},
                "status": status});
            let text = old.to_string();
            let read = restage_gate::internals::read_as_old_object(&text).expect("JSON");
            let whole = workload.rollout_in_progress(&old);
            assert_eq!(
                workload.rollout_in_progress(&read),
                whole,
                "{kind}: {status}"
            );
            // What the kind declares is enough on its own, not only with the other kinds'.
            let own = with(old.clone(), |o| {
                o["status"] = declared(&status, workload.declared().status)
            });
            assert_eq!(
                workload.rollout_in_progress(&own),
                whole,
                "{kind} alone: {status}"
            );
            answers.push(whole);
        }
        assert!(
            !answers[0] && answers.contains(&true),
            "{kind}: {answers:?}"
        );
    }
}

/// `status` with only the members `read` names (of the objects listed in one, the members
/// named).
fn declared(status: &Value, read: &[restage_gate::workload::StatusMember]) -> Value {
    let keep = |item: &Value, members: &[&str]| -> Value {
        item.as_object()
            .map(|o| {
                let kept = o.iter().filter(|(k, _)| members.contains(&k.as_str()));
                Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect())
            })
            .unwrap_or_else(|| item.clone())
    };
    let mut out = serde_json::Map::new();
    for member in read {
        let (key, members) = (member.name, member.json.element_members());
        let Some(value) = status.get(key) else {
            continue;
        };
        let value = match value.as_array() {
            Some(items) if !members.is_empty() => {
                Value::Array(items.iter().map(|i| keep(i, members)).collect())
            }
            _ => value.clone(),
        };
        out.insert(key.to_string(), value);
    }
    Value::Object(out)
}

/// The settings of each mode.
fn mode(mode: &str) -> Value {
    json!({ "mode": mode })
}

/// A request's one warning.
fn warning_of(r: &kubewarden_policy_sdk::response::ValidationResponse) -> String {
    r.warnings
        .iter()
        .flatten()
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The promise in every mode and kind: a binding change that removes a binding, or changes the
/// secret one projects, never leaves a template that mounts the removed secret. Defer mode
/// holds it where a recreated pod takes the current template (`OnDelete`) and rolls it now on
/// a Deployment; reject mode never refuses it; a bind is still refused.
#[test]
fn unbinds_and_secret_switches_are_never_refused_and_never_paused_in_every_kind() {
    use Expect::*;
    let orders = orders_binding();
    let switched = Binding {
        secret: "orders-db-secret-2".into(),
        ..orders_binding()
    };
    for kind in kinds() {
        let bound = || bind(unbound(kind), &orders);
        let unbind_request = || update(bound(), unbind(bound(), &orders));
        let switch_request = || update(bound(), bind(bound(), &switched));
        let held_when_defer = || {
            if holds_unbinds(kind) {
                Mutated("held", hold_paths(kind))
            } else {
                Noted("rolling")
            }
        };
        let cases: Vec<(&str, Request, Expect)> = vec![
            ("defer unbind", unbind_request(), held_when_defer()),
            ("defer secret switch", switch_request(), held_when_defer()),
            (
                "reject unbind",
                unbind_request().settings(mode("reject")),
                Noted("rolling"),
            ),
            (
                "reject secret switch",
                switch_request().settings(mode("reject")),
                Noted("rolling"),
            ),
            (
                "reject bind",
                update(unbound(kind), bound()).settings(mode("reject")),
                Rejected,
            ),
        ];
        for (name, request, expect) in cases {
            let refusal_avoided = name.starts_with("reject u") || name.starts_with("reject s");
            let r = check(&format!("{kind} {name}"), &request, expect);
            if refusal_avoided {
                let warning = warning_of(&r);
                assert!(
                    warning.contains(kind.kind()) && warning.contains("orders-db"),
                    "{kind} {name}: {warning}"
                );
                let reason = &r.audit_annotations.expect("audit")["reason"];
                assert!(reason.contains("not refused"), "{kind} {name}: {reason}");
            }
        }
    }
}

/// `kubectl rollout resume` of a Deployment restage-gate does not hold is the owner's change,
/// in either mode: the binding the projector folded into the same request rolls with it. On a
/// held Deployment the same request is a release.
#[test]
fn an_owners_resume_is_never_paused_again() {
    use Expect::*;
    let orders = orders_binding();
    let paused = |d: Value| with(d, |d| d["spec"]["paused"] = json!(true));
    let resumed = |d: Value| with(d, |d| d["spec"]["paused"] = json!(false));
    let unpaused = |d: Value| {
        with(d, |d| {
            d["spec"].as_object_mut().expect("spec").remove("paused");
        })
    };
    let owner_paused = || paused(deployment());
    let held_bound = || held(bind(deployment(), &orders), "+orders-db");
    let cases: Vec<(&str, Request, Expect)> = vec![
        (
            "defer resume with a bind",
            update(owner_paused(), resumed(bind(deployment(), &orders))),
            Plain,
        ),
        (
            "defer resume by dropping paused, with a bind",
            update(owner_paused(), unpaused(bind(deployment(), &orders))),
            Plain,
        ),
        (
            "reject resume with a bind",
            update(owner_paused(), resumed(bind(deployment(), &orders))).settings(mode("reject")),
            Plain,
        ),
        (
            "defer bind while still paused",
            update(owner_paused(), paused(bind(deployment(), &orders))),
            Plain,
        ),
        (
            "defer bind on a running Deployment",
            update(deployment(), bind(deployment(), &orders)),
            Mutated("held", hold_paths(kind_of(&deployment()))),
        ),
        (
            "defer resume of a held Deployment with another bind",
            update(held_bound(), resumed(bind(held_bound(), &cache_binding()))),
            Mutated("released", marker_paths(kind_of(&deployment()))),
        ),
    ];
    for (name, request, expect) in cases {
        check(&format!("Deployment {name}"), &request, expect);
    }
}

/// A volume recognised through `extraVolumePrefixes` is a binding volume whatever its source,
/// so the secret of a plain `secret` volume is a binding secret: switching it removes a secret
/// from the template, in every kind and mode, as an unbind does.
#[test]
fn an_extra_prefix_secret_volume_switching_its_secret_is_a_secret_removal() {
    use restage_gate_testkit::secret_volume::{attach, settings, switch_secret};
    use Expect::*;
    for kind in kinds() {
        let bound = || attach(unbound(kind), "ledger", "ledger-secret");
        let switched = || switch_secret(bound(), "ledger", "ledger-secret-2");
        let held_bound = || held(bound(), "+ledger");
        let (defer, held_defer) = if holds_unbinds(kind) {
            // `+ledger` switched is still `+ledger`: the markers stay as they are.
            (Mutated("held", hold_paths(kind)), Noted("held"))
        } else {
            (Noted("rolling"), Mutated("released", hold_paths(kind)))
        };
        let cases: Vec<(&str, Request, Expect)> = vec![
            (
                "bind",
                update(unbound(kind), bound()).settings(settings("defer")),
                Mutated("held", hold_paths(kind)),
            ),
            (
                "switch",
                update(bound(), switched()).settings(settings("defer")),
                defer,
            ),
            (
                "switch while held",
                update(
                    held_bound(),
                    switch_secret(held_bound(), "ledger", "ledger-secret-2"),
                )
                .settings(settings("defer")),
                held_defer,
            ),
            (
                "reject switch",
                update(bound(), switched()).settings(settings("reject")),
                Noted("rolling"),
            ),
            (
                "reject unbind",
                update(bound(), unbound(kind)).settings(settings("reject")),
                Noted("rolling"),
            ),
            (
                "reject bind",
                update(unbound(kind), bound()).settings(settings("reject")),
                Rejected,
            ),
        ];
        for (name, request, expect) in cases {
            let r = check(&format!("{kind} {name}"), &request, expect);
            if name == "reject switch" || (!holds_unbinds(kind) && name == "switch") {
                let warning = warning_of(&r);
                assert!(
                    warning.contains("ledger-secret"),
                    "{kind} {name}: {warning}"
                );
            }
        }
    }
}

/// Only a Deployment has a resume: a StatefulSet or DaemonSet whose owner switches its own
/// `OnDelete` back to `RollingUpdate` along with a binding change is held, and the hold
/// remembers the owner's new strategy for the release to restore.
#[test]
fn an_owners_switch_back_to_rolling_update_is_held_remembering_it() {
    use restage_gate::workload::ORIGINAL_STRATEGY_ANNOTATION;
    // The kinds held with `OnDelete`, whose control is a strategy.
    let strategy_kinds =
        restage_gate::workload::kinds().filter(|w| w.default_control().is_object());
    for kind in strategy_kinds {
        let on_delete = with(unbound(kind), |o| {
            o["spec"]["updateStrategy"] = json!({"type": "OnDelete"})
        });
        let rolling = bind(unbound(kind), &orders_binding());
        let r = update(on_delete, rolling.clone()).run();
        let held = r.mutated_object.expect("held");
        assert_eq!(
            held["spec"]["updateStrategy"],
            json!({"type": "OnDelete"}),
            "{kind}"
        );
        let remembered = annotation(&held, ORIGINAL_STRATEGY_ANNOTATION).expect("remembered");
        assert_eq!(
            serde_json::from_str::<Value>(remembered).ok().as_ref(),
            Some(&rolling["spec"]["updateStrategy"]),
            "{kind}"
        );
    }
}
