//! The product promise, end to end: on the compiled module, through realistic sequences of
//! platform, servicebinding.io and kubectl writes to a StatefulSet (Korifi's), a DaemonSet and
//! a Deployment, binds and unbinds restart no pod until the app is restarted or restaged (or
//! the window job runs inside a maintenance window), which then rolls once with every held
//! change; a Deployment unbind rolls at once, so no pod ever starts from a template that mounts
//! a deleted secret; in either webhook order. The three setups the README offers run as
//! shipped: the monitor alone (measure first), defer, and defer with its guard, which also
//! closes the projector's race with Korifi's runner. The table in docs/testing.md ("What it
//! guarantees") is generated from these runs.

use std::sync::OnceLock;
use std::time::SystemTime;

use restage_gate::markers::{HELD_SINCE_ANNOTATION, PENDING_ANNOTATION, RELEASE_ANNOTATION};
use restage_gate_demo::steps::{window_closed, window_open, window_opened};
use restage_gate_e2e::cluster::{every_kind, Cluster, Controller, Kind, Mode, Order, Policy};
use restage_gate_e2e::host::policy_under_test;
use restage_gate_release::repository;
use restage_gate_testkit::descriptor::Owner;
use restage_gate_testkit::fixtures::cache_binding;
use restage_gate_testkit::hold::{held, markers_on};
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

/// A running app with `policies` installed (none: no policy).
fn app_under(kind: Kind, order: Order, policies: Vec<Policy>) -> Cluster {
    Cluster::with_policies(policy_under_test(), kind, order, policies, INSTANCES)
}

/// The ClusterAdmissionPolicy `name` of the install manifest `file`, as a user applies it.
fn shipped(file: &str, name: &str) -> Policy {
    let documents = repository::read(&repository::root(), file)
        .and_then(|text| repository::yaml_documents(file, &text))
        .unwrap_or_else(|e| panic!("{e}"));
    let manifest = documents
        .iter()
        .find(|d| d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("{file}: no policy {name}"));
    Policy::from_manifest(manifest).unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// A running app with the defer policy and its guard installed.
fn guarded(kind: Kind, order: Order) -> Cluster {
    app_under(kind, order, vec![defer(), guard()])
}

/// `policy.yaml`: defer mode.
fn defer() -> Policy {
    shipped("policy.yaml", "restage-gate")
}

/// `guard.yaml`: reject mode, validating, next to the defer policy.
fn guard() -> Policy {
    shipped("guard.yaml", "restage-gate-guard")
}

/// `monitor.yaml`: reject mode in Kubewarden's monitor mode, to measure first.
fn monitor() -> Policy {
    shipped("monitor.yaml", "restage-gate-monitor")
}

/// `policy` with `settings` added to its own.
fn with_settings(mut policy: Policy, settings: Value) -> Policy {
    for (key, value) in settings.as_object().into_iter().flatten() {
        policy.settings[key] = value.clone();
    }
    policy
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
    kind.fixture_control()
}

fn assert_held(c: &Cluster, want_pending: &str) {
    let kind = c.kind.name();
    assert!(c.is_held(), "{kind}: held");
    assert_eq!(c.control(), c.kind.held_control(), "{kind}: held control");
    assert_eq!(pending(c), want_pending, "{kind}: pending");
    let remembered = c
        .annotation(c.kind.remembered_annotation())
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

/// The app restarted or restaged the way its owner does it: `cf restart` on Korifi, a new
/// image with kubectl.
fn restage(c: &mut Cluster) -> bool {
    match c.kind.owner() {
        Owner::Korifi => c.cf_restart(),
        Owner::Kubectl => c.rolling_deploy(),
    }
}

/// Bound and running with `binding` on every pod, no hold, counters from zero.
fn running_with(kind: Kind, order: Order, binding: &Binding) -> Cluster {
    rolled_out(app(kind, order), binding)
}

/// `c` with `binding` bound and rolled out to every pod, no hold, counters from zero.
fn rolled_out(mut c: Cluster, binding: &Binding) -> Cluster {
    c.bind(binding);
    restage(&mut c);
    assert!(!c.is_held());
    c.restarts = 0;
    c.rollouts.clear();
    c
}

/// `c` running with `orders-db`, then held with binds, and for a kind that holds unbinds an
/// unbind too: `cache` bound, then `orders-db` unbound (a kind that rolls an unbind at once:
/// the user-provided service bound instead).
fn held_with_binds(c: Cluster) -> Cluster {
    let mut c = rolled_out(c, &orders_db());
    assert!(c.bind(&cache_binding()));
    let second = if c.kind.holds_unbinds() {
        assert!(c.unbind(&orders_db()));
        "-orders-db".into()
    } else {
        assert!(c.bind(&upsi()));
        format!("+{}", upsi().name)
    };
    assert_held(&c, &format!("+cache {second}"));
    c
}

/// The window job runs twice on a held workload outside every window: it writes, the policy
/// drops its annotation and keeps the hold, so no field changes and nothing rolls (a real API
/// server still records the job's first write in managedFields: docs/testing.md).
fn window_job_outside_every_window(c: Cluster) -> Row {
    let mut c = held_with_binds(c);
    let held = c.object.clone();
    let held_pending = pending(&c);
    for tick in 1..=2 {
        let unchanged = c.unchanged_writes;
        assert!(c.window_job(), "tick {tick}: the held workload is selected");
        assert_eq!(c.object, held, "tick {tick}: the stored workload");
        assert_eq!(
            c.unchanged_writes,
            unchanged + 1,
            "tick {tick}: changes no field"
        );
    }
    assert_held(&c, &held_pending);
    assert!(c.annotation(RELEASE_ANNOTATION).is_none());
    measure(&mut c, None)
}

/// A maintenance window opens (the defer policy applied again with one open) and the window
/// job runs twice: the first run releases, the second selects nothing.
fn window_job_inside_a_window(mut c: Cluster) -> Row {
    let row = measure(
        &mut c,
        Some(&|c| {
            c.apply_policy(with_settings(defer(), window_open()));
            assert!(c.window_job(), "the held workload is selected");
            assert_released(c);
            let (stored, restarts) = (c.object.clone(), c.restarts);
            assert!(!c.window_job(), "not selected any more: no write");
            assert_eq!((&c.object, c.restarts), (&stored, restarts));
        }),
    );
    let mut want: Vec<String> = if c.kind.holds_unbinds() {
        vec!["cache".into()]
    } else {
        vec!["orders-db".into(), "cache".into(), upsi().name]
    };
    want.sort();
    for mut seen in c.pod_bindings() {
        seen.sort();
        assert_eq!(seen, want, "every held change, on every pod");
    }
    row
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
    /// The kinds it runs on.
    kinds: fn(Kind) -> bool,
    /// `{scale}`, `{deploy}` and `{resume}` stand for how the kind's platform does them.
    name: &'static str,
    run: fn(Kind, Order) -> Row,
}

impl Scenario {
    fn title(&self, kind: Kind) -> String {
        let scale = kind.scale_to_four();
        let deploy = kind.deploy_command();
        let held = if kind.holds_unbinds() {
            "a bind and an unbind"
        } else {
            "two binds"
        };
        self.name
            .replace("{scale}", scale)
            .replace("{deploy}", deploy)
            .replace("{resume}", kind.resume_command())
            .replace("{held}", held)
    }
}

fn every(_: Kind) -> bool {
    true
}

/// The kinds Korifi runs apps as.
fn korifi(kind: Kind) -> bool {
    kind.owner() == Owner::Korifi
}

/// The kinds a user runs with kubectl.
fn kubectl(kind: Kind) -> bool {
    kind.owner() == Owner::Kubectl
}

/// The kinds that hold an unbind like a bind.
fn holds_unbinds(kind: Kind) -> bool {
    kind.holds_unbinds()
}

/// The kinds that roll an unbind or a secret switch now.
fn rolls_unbinds(kind: Kind) -> bool {
    !kind.holds_unbinds()
}

/// The kinds whose owner resumes a stopped rollout with a command of its own.
fn resumable(kind: Kind) -> bool {
    kind.resumed(&kind.fixture()).is_some()
}

/// The kinds whose pods created while held start from the old template.
fn old_template_pods(kind: Kind) -> bool {
    !kind.new_pods_see_held_changes()
}

/// The kinds `kubectl rollout restart` restarts while held.
fn restarts_while_held(kind: Kind) -> bool {
    !kind.restart_refused(&held(kind.fixture(), "+orders-db", "2026-12-01T09:00:00Z"))
}

/// The kinds `kubectl rollout restart` refuses while held, which the owner's resume releases.
fn resumes_while_held(kind: Kind) -> bool {
    !restarts_while_held(kind) && resumable(kind)
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            kinds: every,
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
            kinds: every,
            name: "bind three services in a row",
            run: |k, o| {
                let mut c = bound_app(k, o, &[upsi(), orders_db(), cache_binding()]);
                assert_held(&c, &format!("+{} +orders-db +cache", upsi().name));
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: holds_unbinds,
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
            kinds: rolls_unbinds,
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
            kinds: rolls_unbinds,
            name: "bind, then unbind another service (rolls now, the held bind with it)",
            run: |k, o| {
                let mut c = running_with(k, o, &orders_db());
                assert!(c.bind(&cache_binding()));
                assert_held(&c, "+cache");
                released_by(c, &|c| c.unbind(&orders_db()))
            },
        },
        Scenario {
            kinds: korifi,
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
            kinds: every,
            name: "bind, then {scale}",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                assert!(c.scale(4));
                assert_held(&c, "+orders-db");
                // a held Deployment scales its old ReplicaSet: the new pod has the old template
                let want: &[&str] = if k.new_pods_see_held_changes() {
                    &["orders-db"]
                } else {
                    &[]
                };
                assert_eq!(c.pod_bindings()[3], want, "the new pod");
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: every,
            name: "bind, then delete a pod",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                c.delete_pod(1);
                let want: &[&str] = if k.new_pods_see_held_changes() {
                    &["orders-db"]
                } else {
                    &[]
                };
                assert_eq!(c.pod_bindings()[1], want, "the recreated pod");
                measure(&mut c, None)
            },
        },
        Scenario {
            kinds: old_template_pods,
            name: "bind, then {scale}, then {deploy}",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                assert!(c.scale(4));
                released_by(c, &Cluster::rolling_deploy)
            },
        },
        Scenario {
            kinds: korifi,
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
            kinds: every,
            name: "bind two, then {deploy}",
            run: |k, o| {
                released_by(
                    bound_app(k, o, &[upsi(), orders_db()]),
                    &Cluster::rolling_deploy,
                )
            },
        },
        Scenario {
            kinds: restarts_while_held,
            name: "bind, then kubectl rollout restart",
            run: |k, o| released_by(bound_app(k, o, &[orders_db()]), &Cluster::rollout_restart),
        },
        Scenario {
            kinds: resumes_while_held,
            name: "bind, then {resume} (kubectl rollout restart is refused while held)",
            run: |k, o| {
                let mut c = bound_app(k, o, &[orders_db()]);
                assert!(!c.rollout_restart(), "kubectl refuses it while held");
                released_by(c, &Cluster::rollout_resume)
            },
        },
        Scenario {
            kinds: every,
            name: "bind, then kubectl annotate restage-gate.io/release=now",
            run: |k, o| {
                released_by(bound_app(k, o, &[orders_db()]), &|c| {
                    c.annotate(RELEASE_ANNOTATION, "now")
                })
            },
        },
        Scenario {
            kinds: every,
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
            kinds: korifi,
            name: "bind, then cf restart",
            run: |k, o| released_by(bound_app(k, o, &[orders_db()]), &Cluster::cf_restart),
        },
        Scenario {
            kinds: holds_unbinds,
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
            kinds: rolls_unbinds,
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
            kinds: every,
            name: "bind inside a maintenance window (the bind is the restage)",
            run: |k, o| {
                let mut c = app_with(k, o, Mode::Defer, window_open());
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
            kinds: korifi,
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
            kinds: every,
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
            kinds: resumable,
            name: "paused by its owner: a bind arrives with {resume} (the owner's: rolls now)",
            run: |k, o| {
                let mut c = app(k, o);
                let paused = k.stopped_by_owner(c.object.clone().unwrap_or_default());
                assert!(c.update("kubectl patch", paused));
                c.bind_pending(&orders_db());
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        assert!(c.rollout_resume());
                    }),
                );
                assert!(!c.is_held(), "the owner's resume is not paused again");
                assert_eq!(c.control(), k.default_control());
                row
            },
        },
        Scenario {
            kinds: kubectl,
            name: "reject mode: bind, then {deploy}",
            run: |k, o| {
                let mut c = app_with(k, o, Mode::Reject, json!({}));
                assert!(!c.bind(&orders_db()), "the bind is refused");
                let object = c.object.clone().unwrap_or_default();
                let [namespace, name] =
                    ["namespace", "name"].map(|key| object["metadata"][key].as_str().unwrap_or_default());
                assert!(
                    c.refused[0].message.contains(&k.restart(namespace, name)),
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
        Scenario {
            kinds: every,
            name: "held ({held}), then the window job runs twice, no maintenance window configured (changes no field)",
            run: |k, o| window_job_outside_every_window(app(k, o)),
        },
        Scenario {
            kinds: every,
            name: "held ({held}), then the window job runs twice outside the maintenance window (changes no field)",
            run: |k, o| window_job_outside_every_window(app_with(k, o, Mode::Defer, window_closed(SystemTime::now()))),
        },
        Scenario {
            kinds: every,
            name: "held ({held}), a maintenance window opens, then the window job runs twice (the first releases)",
            run: |k, o| window_job_inside_a_window(held_with_binds(app(k, o))),
        },
        Scenario {
            kinds: every,
            name: "monitor only: bind (the bind is the restage: rolls as with no policy; reported, not refused)",
            run: |k, o| {
                let bind = |c: &mut Cluster| assert!(c.bind(&orders_db()));
                let mut c = app_under(k, o, vec![monitor()]);
                let row = measure(&mut c, Some(&bind));
                let without = measure(&mut app_under(k, o, vec![]), Some(&bind));
                assert_eq!(row, without, "as with no policy");
                let [report] = c.reports.as_slice() else {
                    panic!("one report: {:?}", c.reports);
                };
                assert_eq!(
                    (report.policy.as_str(), report.writer.as_str()),
                    (monitor().name.as_str(), "servicebinding reconciler")
                );
                let refusal = report.refusal.clone().unwrap_or_default();
                assert!(refusal.contains("would restart every pod"), "{report:?}");
                row
            },
        },
        Scenario {
            kinds: every,
            name: "defer + monitor: bind two, then {deploy} (the monitor sees the hold: reports nothing)",
            run: |k, o| {
                let mut c = app_under(k, o, vec![defer(), monitor()]);
                for binding in [orders_db(), cache_binding()] {
                    assert!(c.bind(&binding));
                }
                assert_held(&c, "+orders-db +cache");
                let row = measure(&mut c, Some(&|c| assert!(c.rolling_deploy())));
                assert_released(&c);
                assert!(c.reports.is_empty(), "{:?}", c.reports);
                row
            },
        },
        Scenario {
            kinds: every,
            name: "defer + guard: bind three services in a row, then {scale}, then {deploy}",
            run: |k, o| {
                let mut c = guarded(k, o);
                for binding in [upsi(), orders_db(), cache_binding()] {
                    assert!(c.bind(&binding), "{}: {} bound", k.name(), binding.name);
                }
                assert!(c.scale(INSTANCES + 1));
                assert_held(&c, &format!("+{} +orders-db +cache", upsi().name));
                released_by(c, &Cluster::rolling_deploy)
            },
        },
        Scenario {
            kinds: every,
            name: "defer + guard: bind, then kubectl annotate restage-gate.io/release=now",
            run: |k, o| {
                let mut c = guarded(k, o);
                assert!(c.bind(&orders_db()));
                released_by(c, &|c| c.annotate(RELEASE_ANNOTATION, "now"))
            },
        },
        Scenario {
            kinds: every,
            name: "defer + guard: held ({held}), a maintenance window opens, then the window job runs twice",
            run: |k, o| {
                let c = held_with_binds(guarded(k, o));
                window_job_inside_a_window(c)
            },
        },
        Scenario {
            kinds: korifi,
            name: "defer + guard: bind, then the runner writes three times, then cf restart",
            run: |k, o| {
                let mut c = guarded(k, o);
                assert!(c.bind(&orders_db()));
                let held = c.object.clone();
                for _ in 0..3 {
                    assert!(c.runner(INSTANCES), "the guard accepts the held rewrite");
                }
                assert_eq!(c.object, held, "no write loop");
                released_by(c, &Cluster::cf_restart)
            },
        },
        Scenario {
            kinds: holds_unbinds,
            name: "defer + guard: unbind, then kubectl rollout restart",
            run: |k, o| {
                let mut c = rolled_out(guarded(k, o), &orders_db());
                assert!(c.unbind(&orders_db()));
                assert_held(&c, "-orders-db");
                released_by(c, &Cluster::rollout_restart)
            },
        },
        Scenario {
            kinds: rolls_unbinds,
            name: "defer + guard: bind, then unbind another service (rolls now, the held bind with it)",
            run: |k, o| {
                let mut c = rolled_out(guarded(k, o), &orders_db());
                assert!(c.bind(&cache_binding()));
                assert_held(&c, "+cache");
                released_by(c, &|c| c.unbind(&orders_db()))
            },
        },
        Scenario {
            kinds: resumes_while_held,
            name: "defer + guard: bind, then {resume}",
            run: |k, o| {
                let mut c = guarded(k, o);
                assert!(c.bind(&orders_db()));
                released_by(c, &Cluster::rollout_resume)
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

/// Every scenario in both webhook orders, with the same results, checked against the promise:
/// no restart before the restage, one rollout of every running pod at it, refusals only in
/// reject mode (the guard accepts every held output of the defer policy). Run once per test
/// binary.
fn scenario_rows() -> &'static [(Kind, String, Row)] {
    static ROWS: OnceLock<Vec<(Kind, String, Row)>> = OnceLock::new();
    ROWS.get_or_init(|| {
        let mut rows = Vec::new();
        for kind in every_kind() {
            for scenario in scenarios().iter().filter(|s| (s.kinds)(kind)) {
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
        rows
    })
}

#[test]
fn binding_changes_restart_nothing_until_the_restage_in_either_webhook_order() {
    assert!(!scenario_rows().is_empty());
}

/// How many writes Korifi's runner makes for one change before it gives up, in the race.
const ATTEMPTS: usize = 3;

/// What the projector's race leaves before the restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Raced {
    /// Pods restarted by the race.
    rolled: bool,
    held: bool,
    /// Which of the runner's writes was stored (1: the first).
    runner_write: usize,
}

/// The projector's race with Korifi's runner: a ServiceBinding is live but its reconciler has
/// not projected it yet when the runner rewrites the StatefulSet, which is not held, and the
/// projector's webhook folds the binding into the runner's write. The runner reconciles first,
/// then the servicebinding reconciler; a refused write is retried on the runner's next
/// reconcile. The results differ by webhook order: a row for each, `real` and `swapped` what
/// each order leaves. A `cf restart` then brings the binding to every pod.
fn race(
    setup: &str,
    policies: &dyn Fn() -> Vec<Policy>,
    real: Raced,
    swapped: Raced,
) -> Vec<(Kind, String, Row)> {
    let orders = [
        (
            Order::PolicyFirst,
            "restage-gate's webhook first, the real order",
            real,
        ),
        (
            Order::ProjectorFirst,
            "the projector's webhook first",
            swapped,
        ),
    ];
    let korifi_kinds = every_kind().into_iter().filter(|&k| korifi(k));
    let runs = korifi_kinds.flat_map(|kind| orders.map(|run| (kind, run)));
    runs.map(|(kind, (order, placed, want))| {
        let name = format!(
            "the projector race: a binding not yet projected, folded into the runner's write ({setup}; {placed})"
        );
        let mut c = app_under(kind, order, policies());
        c.bind_pending(&orders_db());
        let landed = c.run_controllers(
            &[Controller::Runner(INSTANCES), Controller::Bindings],
            ATTEMPTS,
        );
        let [(_, Some(runner_write)), (_, Some(1))] = landed[..] else {
            panic!(
                "{name}: the runner's write lands within {ATTEMPTS}, the reconciler's first: {landed:?}, refused {:?}",
                c.refused
            );
        };
        let raced = Raced {
            rolled: c.restarts > 0,
            held: c.is_held(),
            runner_write,
        };
        assert_eq!(raced, want, "{name}");
        assert!(
            c.refused.iter().all(|r| r.writer == "statefulset-runner"),
            "{name}: only the runner's racing writes are refused: {:?}",
            c.refused
        );
        assert_eq!(c.refused.len(), runner_write - 1, "{name}");
        let row = measure(&mut c, None);
        assert!(c.cf_restart());
        assert!(
            c.pod_bindings().iter().all(|b| b == &["orders-db"]),
            "{name}: cf restart brings the binding to every pod"
        );
        (kind, name, row)
    })
    .collect()
}

fn race_rows() -> Vec<(Kind, String, Row)> {
    // restage-gate's webhook sees the runner's write before the projector folds the binding in
    // and lets it through: the known limit
    let rolls = Raced {
        rolled: true,
        held: false,
        runner_write: 1,
    };
    // restage-gate sees the folded binding and holds it
    let held = Raced {
        rolled: false,
        held: true,
        runner_write: 1,
    };
    // the guard refuses the folded write; the reconciler's projection is held, and the
    // runner's next write keeps the hold
    let guarded = Raced {
        runner_write: 2,
        ..held
    };
    let mut rows = race("defer only", &|| vec![defer()], rolls, held);
    rows.extend(race(
        "defer + guard",
        &|| vec![defer(), guard()],
        guarded,
        held,
    ));
    rows
}

#[test]
fn in_the_projector_race_defer_alone_rolls_in_the_real_order_and_with_the_guard_nothing_rolls() {
    let rows = race_rows();
    let korifi_kinds = every_kind().into_iter().filter(|&k| korifi(k)).count();
    assert!(korifi_kinds > 0, "a kind Korifi runs apps as");
    assert_eq!(rows.len(), 4 * korifi_kinds, "two setups, two orders");
}

#[test]
fn the_table_in_docs_testing_md_is_this_run() {
    let mut rows = scenario_rows().to_vec();
    rows.extend(race_rows());
    let place = |kind: &Kind| every_kind().iter().position(|k| k == kind);
    rows.sort_by_key(|(kind, _, _)| place(kind));
    check_table(&render(&rows));
}

/// The model catches what the scenarios promise never happens. A Deployment its owner paused is
/// left alone by the policy, so after an unbind the old ReplicaSet still scales a template that
/// mounts the deleted secret (so does every kind whose new pods start from the old template).
#[test]
fn the_model_catches_a_pod_started_from_a_template_with_a_deleted_secret() {
    let kinds: Vec<Kind> = every_kind()
        .into_iter()
        .filter(|k| !k.new_pods_see_held_changes())
        .collect();
    assert!(
        !kinds.is_empty(),
        "a kind whose new pods start from the old template"
    );
    for kind in kinds {
        catches_a_pod_from_a_deleted_secret(kind);
    }
}

fn catches_a_pod_from_a_deleted_secret(kind: Kind) {
    let mut c = running_with(kind, Order::PolicyFirst, &orders_db());
    let paused = kind.stopped_by_owner(c.object.clone().unwrap_or_default());
    assert!(c.update("kubectl patch", paused));
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

/// An object a kind declines to hold (a blue-green or workloadRef Rollout) is left to its own
/// controller: its owner's edit that makes it one, a bind and a scale store, roll and warn
/// exactly as with no policy, in either webhook order, and nothing is held.
#[test]
fn objects_a_kind_declines_are_accepted_unchanged_as_with_no_policy() {
    for kind in every_kind() {
        for declined in kind.declined() {
            let run = |policies: Vec<Policy>, order: Order| {
                let mut c = app_under(kind, order, policies);
                let object = (declined.edit)(c.object.clone().unwrap_or_default());
                assert!(c.update("kubectl apply", object), "{}", declined.title);
                c.bind(&orders_db());
                assert!(c.scale(INSTANCES + 1));
                c
            };
            let without = run(vec![], Order::PolicyFirst);
            for order in [Order::PolicyFirst, Order::ProjectorFirst] {
                for policies in [vec![defer()], vec![defer(), guard()]] {
                    let c = run(policies, order);
                    let title = declined.title;
                    assert!(!c.is_held(), "{title}: not held");
                    assert_eq!(c.object, without.object, "{title}: stored as written");
                    assert_eq!(c.pods, without.pods, "{title}: pods");
                    assert_eq!(c.restarts, without.restarts, "{title}: restarts");
                    assert!(c.warnings.is_empty(), "{title}: {:?}", c.warnings);
                    assert!(c.refused.is_empty(), "{title}: {:?}", c.refused);
                }
            }
        }
    }
}

/// The setups the README offers, as their manifests ship: the defer policy mutates, the guard
/// refuses in the validating phase, the monitor only reports.
#[test]
fn the_shipped_policies_are_the_setups_the_scenarios_run() {
    let deployed = |p: &Policy| (p.mutating, p.monitor, p.settings["mode"].clone());
    assert_eq!(deployed(&defer()), (true, false, json!("defer")));
    assert_eq!(deployed(&guard()), (false, false, json!("reject")));
    assert_eq!(deployed(&monitor()), (false, true, json!("reject")));
}

/// Inside a maintenance window the defer policy lets a bind roll at once; the guard refuses it
/// unless its settings have the same windows.
#[test]
fn inside_a_window_the_guard_refuses_a_bind_unless_it_has_the_same_windows() {
    let open = || with_settings(defer(), window_open());
    for kind in every_kind() {
        for order in [Order::PolicyFirst, Order::ProjectorFirst] {
            let mut c = app_under(kind, order, vec![open(), guard()]);
            assert!(!c.bind(&orders_db()), "{}: refused", kind.name());
            assert_eq!(c.refused[0].policy, guard().name);
            let same_windows = with_settings(guard(), window_open());
            let mut c = app_under(kind, order, vec![open(), same_windows]);
            assert!(c.bind(&orders_db()), "{}: accepted", kind.name());
            assert_eq!((c.rollouts.len(), c.restarts), (1, INSTANCES as usize));
        }
    }
}

/// A maintenance window spreading its releases over its first 30 minutes (docs/install.md's
/// example), the window job ticking every five minutes: each held workload is released at the
/// first tick from its own minute, a few per tick instead of all at the first, and rolls once;
/// before that each tick changes no field. The module reads the real clock, so each tick
/// applies the window again opened five minutes earlier, as if the clock had moved on.
#[test]
fn a_window_with_a_spread_releases_the_held_workloads_over_the_jobs_ticks() {
    const SPREAD: u16 = 30;
    const TICK: u16 = 5;
    // The tick that reaches a slot: the first at or after it.
    let tick_of = |slot: u16| slot.div_ceil(TICK);
    // One workload per tick. A slot on the minute after a tick is left out: a minute of the
    // real clock passing during the run could move it to that tick.
    let mut uids: Vec<(String, u16)> = Vec::new();
    for i in 0_u32.. {
        let uid = format!("5e7a{i:04x}-0c1d-4e2f-8a3b-4c5d6e7f8091");
        let slot = restage_gate::window::slot(Some(&uid), SPREAD);
        if slot % TICK != 1 && !uids.iter().any(|(_, s)| tick_of(*s) == tick_of(slot)) {
            uids.push((uid, slot));
        }
        if uids.len() == usize::from(tick_of(SPREAD - 1)) + 1 {
            break;
        }
    }
    for kind in every_kind() {
        let mut apps: Vec<Cluster> = uids
            .iter()
            .map(|(uid, _)| held_with_binds(app(kind, Order::PolicyFirst).with_uid(uid)))
            .collect();
        let mut released_at: Vec<Option<u16>> = vec![None; apps.len()];
        for tick in 0..=tick_of(SPREAD - 1) + 1 {
            let settings = window_opened(SystemTime::now(), u64::from(tick * TICK), SPREAD);
            for (c, released) in apps.iter_mut().zip(&mut released_at) {
                c.apply_policy(with_settings(defer(), settings.clone()));
                let (held, unchanged) = (c.object.clone(), c.unchanged_writes);
                if !c.window_job() {
                    continue;
                }
                if c.is_held() {
                    assert_eq!(
                        (&c.object, c.unchanged_writes),
                        (&held, unchanged + 1),
                        "{}: tick {tick} changes no field of a workload before its slot",
                        kind.name()
                    );
                    let said = c.warnings.last().cloned().unwrap_or_default();
                    assert!(
                        said.contains("stays held until its maintenance-window slot at "),
                        "{said}"
                    );
                } else {
                    assert_released(c);
                    *released = Some(tick);
                }
            }
        }
        for ((c, (uid, slot)), released) in apps.iter().zip(&uids).zip(&released_at) {
            assert_eq!(
                c.object.as_ref().map(|o| &o["metadata"]["uid"]),
                Some(&json!(uid))
            );
            assert_eq!(
                *released,
                Some(tick_of(*slot)),
                "{} {uid}: slot {slot} is reached at tick {}",
                kind.name(),
                tick_of(*slot)
            );
            assert_eq!(c.rollouts.len(), 1, "{}: rolled once", kind.name());
        }
        let ticks: std::collections::BTreeSet<_> = released_at.iter().flatten().collect();
        assert_eq!(
            ticks.len(),
            apps.len(),
            "{}: one release per tick, over {} ticks",
            kind.name(),
            apps.len()
        );
    }
}

/// Kubewarden refuses a write that a policy deployed with `mutating: false` answers with a
/// mutation: defer mode deployed so refuses every bind it would hold.
#[test]
fn defer_mode_deployed_without_mutating_refuses_the_binds_it_would_hold() {
    let validating = Policy {
        mutating: false,
        ..defer()
    };
    for kind in every_kind() {
        let mut c = app_under(kind, Order::PolicyFirst, vec![validating.clone()]);
        assert!(!c.bind(&orders_db()), "{}", kind.name());
        assert!(
            c.refused[0].message.contains("not allow mutations"),
            "{:?}",
            c.refused
        );
        assert_eq!(c.restarts, 0);
    }
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
