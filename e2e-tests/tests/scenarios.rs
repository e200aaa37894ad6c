//! The product promise, end to end: on the compiled module, through realistic sequences of
//! platform, servicebinding.io and kubectl writes to a StatefulSet (Korifi's), a DaemonSet and
//! a Deployment, binds and unbinds restart no pod until the app is restarted or restaged,
//! which then rolls once with every held change; a Deployment unbind rolls at once, so no pod
//! ever starts from a template that mounts a deleted secret; in either webhook order. The
//! table in docs/testing.md ("What it guarantees") is generated from these runs.

use restage_gate::markers::{HELD_SINCE_ANNOTATION, PENDING_ANNOTATION, RELEASE_ANNOTATION};
use restage_gate_e2e::cluster::{Cluster, Kind, Mode, Order};
use restage_gate_e2e::host::policy_under_test;
use restage_gate_testkit::fixtures::{self, cache_binding};
use restage_gate_testkit::hold::{
    control_path, default_control, held_control, markers_on, remembered_annotation,
};
use restage_gate_testkit::korifi::{orders_db, upsi};
use restage_gate_testkit::projector::Binding;
use serde_json::{json, Value};

const INSTANCES: u32 = 3;

fn app(kind: Kind, order: Order) -> Cluster {
    app_with(kind, order, Mode::Defer, json!({}))
}

fn app_with(kind: Kind, order: Order, mode: Mode, settings: Value) -> Cluster {
    Cluster::new(policy_under_test(), kind, mode, order, settings, INSTANCES)
}

/// What the table in docs/testing.md shows of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    restarts_before: usize,
    /// Restarts and rollouts from the restage step (or "—" when the scenario has none).
    at_restage: Option<(usize, usize)>,
    /// Pods running when the restage step began.
    running_at_restage: usize,
    pods_see: String,
    refused: usize,
}

/// Runs up to the restage, counts, then runs the restage.
fn measure(c: &mut Cluster, restage: Option<&dyn Fn(&mut Cluster)>) -> Row {
    let restarts_before = c.restarts;
    let running_at_restage = c.pods.len();
    let at_restage = restage.map(|step| {
        let (restarts, rollouts) = (c.restarts, c.rollouts.len());
        step(c);
        (c.restarts - restarts, c.rollouts.len() - rollouts)
    });
    assert!(
        c.stuck.is_empty(),
        "pods stuck in ContainerCreating: {:?}",
        c.stuck
    );
    Row {
        restarts_before,
        at_restage,
        running_at_restage,
        pods_see: pods_see(c),
        refused: c.refused.len(),
    }
}

/// `3 pods: —` / `2 pods: orders-db; 1 pod: —`, binding guids shortened.
fn pods_see(c: &Cluster) -> String {
    let mut groups: Vec<(Vec<String>, usize)> = Vec::new();
    for bindings in c.pod_bindings() {
        let names: Vec<String> = bindings.iter().map(|n| short(n)).collect();
        match groups.iter_mut().find(|(b, _)| *b == names) {
            Some((_, n)) => *n += 1,
            None => groups.push((names, 1)),
        }
    }
    groups
        .iter()
        .map(|(b, n)| {
            let what = if b.is_empty() {
                "—".to_string()
            } else {
                b.join(", ")
            };
            format!("{n} pod{}: {what}", if *n == 1 { "" } else { "s" })
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn short(name: &str) -> String {
    if name.len() > 12 {
        format!("{}…", &name[..8])
    } else {
        name.to_string()
    }
}

fn pending(c: &Cluster) -> String {
    c.annotation(PENDING_ANNOTATION).unwrap_or_default()
}

/// The control the workload was created with (the API default where the owner set none).
fn original_control(kind: Kind) -> Value {
    let object = fixtures::unbound(kind.name());
    object
        .pointer(&control_path(kind.name()))
        .cloned()
        .unwrap_or_else(|| default_control(kind.name()))
}

fn assert_held(c: &Cluster, want_pending: &str) {
    let kind = c.kind.name();
    assert!(c.is_held(), "{kind}: held");
    assert_eq!(c.control(), held_control(kind), "{kind}: held control");
    assert_eq!(pending(c), want_pending, "{kind}: pending");
    let remembered = c
        .annotation(remembered_annotation(kind))
        .expect("remembered control");
    assert_eq!(
        serde_json::from_str::<Value>(&remembered).expect("JSON"),
        original_control(c.kind),
        "{kind}: remembered control"
    );
    assert!(c.annotation(HELD_SINCE_ANNOTATION).is_some());
}

fn assert_released(c: &Cluster) {
    let kind = c.kind.name();
    assert!(!c.is_held(), "{kind}: released");
    assert_eq!(c.control(), original_control(c.kind), "{kind}: restored");
    let object = c.object.clone().unwrap_or_default();
    assert_eq!(markers_on(&object), Vec::<String>::new(), "{kind}: markers");
}

/// The app restarted or restaged the way its platform does it: `cf restart` on Korifi, a new
/// image for the other kinds.
fn restage(c: &mut Cluster) -> bool {
    match c.kind {
        Kind::StatefulSet => c.cf_restart(),
        _ => c.rolling_deploy(),
    }
}

/// Bound and running with `binding` on every pod, no hold, counters from zero.
fn running_with(kind: Kind, order: Order, binding: &Binding) -> Cluster {
    let mut c = app(kind, order);
    c.bind(binding);
    restage(&mut c);
    assert!(!c.is_held());
    c.restarts = 0;
    c.rollouts.clear();
    c
}

/// A running app with `bindings` bound one after the other.
fn bound_app(kind: Kind, order: Order, bindings: &[Binding]) -> Cluster {
    let mut c = app(kind, order);
    for binding in bindings {
        assert!(c.bind(binding), "{}: {} bound", kind.name(), binding.name);
    }
    c
}

/// Measures `restage` (a write that is stored) and checks it released the hold.
fn released_by(mut c: Cluster, restage: &dyn Fn(&mut Cluster) -> bool) -> Row {
    let row = measure(
        &mut c,
        Some(&|c| {
            assert!(restage(c), "the restage is stored");
        }),
    );
    assert_released(&c);
    row
}

struct Scenario {
    kinds: &'static [Kind],
    /// `{scale}` and `{deploy}` stand for how the kind's platform does them.
    name: &'static str,
    run: fn(Kind, Order) -> Row,
}

impl Scenario {
    fn title(&self, kind: Kind) -> String {
        let (scale, deploy) = match kind {
            Kind::StatefulSet => ("cf scale -i 4", "cf push --strategy rolling"),
            Kind::DaemonSet => ("a fourth node joins", "kubectl set image"),
            Kind::Deployment => ("kubectl scale --replicas 4", "kubectl set image"),
        };
        self.name
            .replace("{scale}", scale)
            .replace("{deploy}", deploy)
    }
}

const KORIFI: &[Kind] = &[Kind::StatefulSet];
const HELD_BY_STRATEGY: &[Kind] = &[Kind::StatefulSet, Kind::DaemonSet];
const DEPLOYMENT: &[Kind] = &[Kind::Deployment];

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            kinds: Kind::every(),
            name: "bind one service to a running app",
            run: |k, o| {
                let mut c = app(k, o);
                assert!(c.bind(&upsi()));
                assert_held(&c, &format!("+{}", upsi().name));
                assert_eq!(c.template_bindings(), [upsi().name]);
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "bind three services in a row",
            run: |k, o| {
                let mut c = bound_app(k, o, &[upsi(), orders_db(), cache_binding()]);
                assert_held(&c, &format!("+{} +orders-db +cache", upsi().name));
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: HELD_BY_STRATEGY,
            name: "unbind, then {scale}",
            run: |k, o| {
                let mut c = running_with(k, o, &orders_db());
                assert!(c.unbind(&orders_db()));
                assert_held(&c, "-orders-db");
                assert!(
                    c.template_bindings().is_empty(),
                    "the removed binding is not kept"
                );
                assert!(c.scale(4));
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: DEPLOYMENT,
            name: "unbind (rolls now), then {scale} and delete a pod",
            run: |k, o| {
                let mut c = running_with(k, o, &orders_db());
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        assert!(c.unbind(&orders_db()));
                        assert!(!c.is_held(), "an unbind is never held");
                        assert!(c.scale(4));
                        c.delete_pod(0);
                    }),
                );
                assert!(c.warnings.iter().any(|w| w.contains("rolls now")));
                row
            },
        },
        Scenario {
            kinds: DEPLOYMENT,
            name: "bind, then unbind another service (rolls now, the held bind with it)",
            run: |k, o| {
                let mut c = running_with(k, o, &orders_db());
                assert!(c.bind(&cache_binding()));
                assert_held(&c, "+cache");
                released_by(c, &|c| c.unbind(&orders_db()))
            },
        },
        Scenario {
            kinds: KORIFI,
            name: "unbind the last binding, then the runner drops SERVICE_BINDING_ROOT",
            run: |k, o| {
                let mut c = running_with(k, o, &orders_db());
                assert!(c.unbind(&orders_db()));
                assert!(c.runner(INSTANCES));
                assert_held(&c, "-orders-db");
                let env = c
                    .object
                    .as_ref()
                    .map(|s| s["spec"]["template"]["spec"]["containers"][0]["env"].to_string());
                assert!(!env.unwrap_or_default().contains("SERVICE_BINDING_ROOT"));
                measure(
                    &mut c,
                    Some(&|c| {
                        c.rollout_restart();
                    }),
                )
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "bind, then {scale}",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                assert!(c.scale(4));
                assert_held(&c, "+orders-db");
                // a held Deployment scales its old ReplicaSet: the new pod has the old template
                let want: &[&str] = if k == Kind::Deployment {
                    &[]
                } else {
                    &["orders-db"]
                };
                assert_eq!(c.pod_bindings()[3], want, "the new pod");
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "bind, then delete a pod",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                c.delete_pod(1);
                let want: &[&str] = if k == Kind::Deployment {
                    &[]
                } else {
                    &["orders-db"]
                };
                assert_eq!(c.pod_bindings()[1], want, "the recreated pod");
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: DEPLOYMENT,
            name: "bind, then {scale}, then {deploy}",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                assert!(c.scale(4));
                released_by(c, &Cluster::rolling_deploy)
            },
        },
        Scenario {
            kinds: KORIFI,
            name: "bind, then the runner writes three times",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                let held = c.object.clone();
                for _ in 0..3 {
                    assert!(c.runner(INSTANCES));
                }
                assert_held(&c, "+orders-db");
                assert_eq!(
                    c.object, held,
                    "the runner's writes change nothing: no write loop"
                );
                assert!(c.unchanged_writes >= 3);
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "bind two, then {deploy}",
            run: |k, o| {
                released_by(
                    bound_app(k, o, &[upsi(), orders_db()]),
                    &Cluster::rolling_deploy,
                )
            },
        },
        Scenario {
            kinds: HELD_BY_STRATEGY,
            name: "bind, then kubectl rollout restart",
            run: |k, o| released_by(bound_app(k, o, &[orders_db()]), &Cluster::rollout_restart),
        },
        Scenario {
            kinds: DEPLOYMENT,
            name:
                "bind, then kubectl rollout resume (kubectl refuses rollout restart while paused)",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                assert!(!c.rollout_restart(), "kubectl refuses a paused Deployment");
                released_by(c, &Cluster::rollout_resume)
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "bind, then kubectl annotate restage-gate.io/release=now",
            run: |k, o| {
                released_by(bound_app(k, o, &[orders_db()]), &|c| {
                    c.annotate(RELEASE_ANNOTATION, "now")
                })
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "bind while {deploy} is half done",
            run: |k, o| {
                let mut c = app(k, o);
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        c.step = Some(1);
                        assert!(c.rolling_deploy());
                        assert_eq!(c.restarts, 1, "one pod updated so far");
                        assert!(c.bind(&orders_db()));
                        assert!(!c.is_held(), "joins the rollout under way");
                        c.step = None;
                        c.reconcile();
                    }),
                );
                assert!(
                    c.pod_bindings().iter().all(|b| b == &["orders-db"]),
                    "no pod left behind"
                );
                row
            },
        },
        Scenario {
            kinds: KORIFI,
            name: "bind, then cf restart",
            run: |k, o| released_by(bound_app(k, o, &[orders_db()]), &Cluster::cf_restart),
        },
        Scenario {
            kinds: HELD_BY_STRATEGY,
            name: "credential rotation, then {scale}",
            run: |k, o| {
                let mut c = running_with(k, o, &orders_db());
                c.rotate(&orders_db(), "orders-db-rotated");
                assert_held(&c, "~orders-db");
                assert!(c.scale(4));
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: DEPLOYMENT,
            name: "credential rotation (rolls now), then {scale}",
            run: |k, o| {
                let mut c = running_with(k, o, &orders_db());
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        c.rotate(&orders_db(), "orders-db-rotated");
                        assert!(!c.is_held(), "the old secret is deleted");
                        assert!(c.scale(4));
                    }),
                );
                assert!(c.warnings.iter().any(|w| w.contains("rolls now")));
                row
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "bind inside a maintenance window (the bind is the restage)",
            run: |k, o| {
                let always = json!({"maintenanceWindows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "start": "00:00", "end": "00:00"}]});
                let mut c = app_with(k, o, Mode::Defer, always);
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        assert!(c.bind(&orders_db()));
                    }),
                );
                assert!(!c.is_held(), "rolls now");
                row
            },
        },
        Scenario {
            kinds: KORIFI,
            name: "reject mode: bind, then cf scale -i 4, then cf restart",
            run: |k, o| {
                let mut c = app_with(k, o, Mode::Reject, json!({}));
                assert!(!c.bind(&orders_db()), "the bind is refused");
                assert!(
                    c.refused[0].message.contains("would restart every pod"),
                    "{:?}",
                    c.refused
                );
                assert!(
                    !c.scale(4),
                    "the projector folds the pending binding into the runner's write"
                );
                measure(
                    &mut c,
                    Some(&|c| {
                        assert!(c.cf_restart());
                    }),
                )
            },
        },
        Scenario {
            kinds: Kind::every(),
            name: "reject mode: unbind one of two (accepted, rolls now), then {scale} and delete a pod",
            run: |k, o| {
                let mut c = app_with(k, o, Mode::Reject, json!({}));
                for binding in [orders_db(), cache_binding()] {
                    assert!(!c.bind(&binding), "a bind is refused");
                }
                assert!(restage(&mut c), "a restage carries the refused binds");
                c.restarts = 0;
                c.rollouts.clear();
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        assert!(c.unbind(&orders_db()), "an unbind is never refused");
                        assert!(c.scale(INSTANCES + 1));
                        c.delete_pod(0);
                    }),
                );
                assert_eq!(c.template_bindings(), ["cache"], "the removed binding is gone");
                assert!(
                    c.warnings.iter().any(|w| w.contains("not refused")),
                    "{:?}",
                    c.warnings
                );
                row
            },
        },
        Scenario {
            kinds: DEPLOYMENT,
            name: "paused by its owner: a bind arrives with kubectl rollout resume (the owner's: rolls now)",
            run: |k, o| {
                let mut c = app(k, o);
                assert!(c.merge_patch(&json!({"spec": {"paused": true}})));
                c.bind_pending(&orders_db());
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        assert!(c.rollout_resume());
                    }),
                );
                assert!(!c.is_held(), "the owner's resume is not paused again");
                assert_eq!(c.control(), json!(false));
                row
            },
        },
        Scenario {
            kinds: &[Kind::DaemonSet, Kind::Deployment],
            name: "reject mode: bind, then {deploy}",
            run: |k, o| {
                let mut c = app_with(k, o, Mode::Reject, json!({}));
                assert!(!c.bind(&orders_db()), "the bind is refused");
                let kind = k.name();
                assert!(
                    c.refused[0]
                        .message
                        .contains(&format!("kubectl rollout restart {}/", kind.to_lowercase())),
                    "{:?}",
                    c.refused
                );
                measure(
                    &mut c,
                    Some(&|c| {
                        assert!(
                            c.rolling_deploy(),
                            "a restage carries the pending binding through"
                        );
                    }),
                )
            },
        },
    ]
}

fn render(rows: &[(Kind, String, Row)]) -> String {
    let mut out = format!(
        "| workload ({INSTANCES} pods) | scenario | pods restarted before the restage | at the restage: restarts / rollouts | pods at the end see | refused writes |\n|---|---|---|---|---|---|\n",
    );
    for (kind, name, row) in rows {
        let at = row
            .at_restage
            .map_or("—".to_string(), |(r, n)| format!("{r} / {n}"));
        out.push_str(&format!(
            "| {} | {name} | {} | {at} | {} | {} |\n",
            kind.name(),
            row.restarts_before,
            row.pods_see,
            row.refused
        ));
    }
    out
}

#[test]
fn binding_changes_restart_nothing_until_the_restage_in_either_webhook_order() {
    let mut rows = Vec::new();
    for &kind in Kind::every() {
        for scenario in scenarios().iter().filter(|s| s.kinds.contains(&kind)) {
            let real = (scenario.run)(kind, Order::PolicyFirst);
            let swapped = (scenario.run)(kind, Order::ProjectorFirst);
            let name = scenario.title(kind);
            assert_eq!(
                real,
                swapped,
                "{} {name}: the webhook order changes nothing",
                kind.name()
            );
            rows.push((kind, name, real));
        }
    }
    for (kind, name, row) in &rows {
        let kind = kind.name();
        let reject_mode = name.starts_with("reject mode");
        assert_eq!(
            row.restarts_before, 0,
            "{kind} {name}: no restart before the restage"
        );
        if let Some((restarts, rollouts)) = row.at_restage {
            if !name.contains("half done") {
                assert_eq!(
                    rollouts, 1,
                    "{kind} {name}: exactly one rollout at the restage"
                );
                assert_eq!(
                    restarts, row.running_at_restage,
                    "{kind} {name}: every running pod once"
                );
            }
        }
        assert_eq!(
            row.refused > 0,
            reject_mode,
            "{kind} {name}: refused writes only in reject mode"
        );
    }
    check_table(&render(&rows));
}

/// The model catches what the scenarios promise never happens. A Deployment its owner paused is
/// left alone by the policy, so after an unbind the old ReplicaSet still scales a template that
/// mounts the deleted secret.
#[test]
fn the_model_catches_a_pod_started_from_a_template_with_a_deleted_secret() {
    let mut c = running_with(Kind::Deployment, Order::PolicyFirst, &orders_db());
    assert!(c.merge_patch(&json!({"spec": {"paused": true}})));
    let warned = c.warnings.len();
    assert!(c.unbind(&orders_db()));
    assert!(
        !c.is_held() && c.warnings.len() == warned,
        "its owner's pause is left alone"
    );
    assert!(c.stuck.is_empty());
    assert!(c.scale(4));
    assert_eq!(
        c.stuck,
        [format!(
            "pod 3 mounts deleted secret {}",
            orders_db().secret
        )]
    );
}

/// The table in the docs is this run's; `BLESS=1` writes it.
fn check_table(table: &str) {
    use restage_gate_release::repository;
    let checked = repository::check_generated(
        &repository::root(),
        "docs/testing.md",
        "scenarios",
        table,
        repository::bless(),
    );
    if let Err(e) = checked {
        panic!("{e}");
    }
}
