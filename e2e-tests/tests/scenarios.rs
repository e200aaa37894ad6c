//! The product promise, end to end: on the compiled module, through realistic sequences of
//! Korifi and servicebinding.io writes, binds and unbinds restart no pod until the app is
//! restarted or restaged, which then rolls once with every held change; in either webhook
//! order. The README's "What it guarantees" table is generated from these runs.

use std::path::PathBuf;

use restage_gate::markers::{
    HELD_SINCE_ANNOTATION, ORIGINAL_STRATEGY_ANNOTATION, PENDING_ANNOTATION,
};
use restage_gate_e2e::cluster::{Cluster, Deployment, Order};
use restage_gate_e2e::host::policy_under_test;
use restage_gate_testkit::korifi::{orders_db, upsi};
use restage_gate_testkit::projector::Binding;
use serde_json::{json, Value};

const INSTANCES: u32 = 3;

fn cache() -> Binding {
    Binding::new(
        "c0ffee00-1d4a-4e8b-9c6f-0a1b2c3d4e5f",
        "cache",
        "cache-credentials",
    )
}

fn app(order: Order) -> Cluster {
    Cluster::new(
        policy_under_test(),
        Deployment::Defer,
        order,
        json!({}),
        INSTANCES,
    )
}

/// What the README table shows of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Row {
    restarts_before: usize,
    /// Restarts and rollouts from the restage step (or "—" when the scenario has none).
    at_restage: Option<(usize, usize)>,
    pods_see: String,
    refused: usize,
}

/// Runs up to the restage, counts, then runs the restage.
fn measure(c: &mut Cluster, restage: Option<&dyn Fn(&mut Cluster)>) -> Row {
    let restarts_before = c.restarts;
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

fn assert_held(c: &Cluster, want_pending: &str) {
    assert!(c.is_held(), "held");
    assert_eq!(c.strategy(), json!({"type": "OnDelete"}));
    assert_eq!(pending(c), want_pending);
    let original = c
        .annotation(ORIGINAL_STRATEGY_ANNOTATION)
        .expect("original strategy");
    assert_eq!(
        serde_json::from_str::<Value>(&original).expect("JSON"),
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    assert!(c.annotation(HELD_SINCE_ANNOTATION).is_some());
}

fn assert_released(c: &Cluster) {
    assert!(!c.is_held(), "released");
    assert_eq!(
        c.strategy(),
        json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
    );
    for key in [
        ORIGINAL_STRATEGY_ANNOTATION,
        HELD_SINCE_ANNOTATION,
        PENDING_ANNOTATION,
    ] {
        assert_eq!(c.annotation(key), None, "{key} removed");
    }
}

/// Bound and running with `binding` on every pod, hold released, counters from zero.
fn running_with(order: Order, binding: &Binding) -> Cluster {
    let mut c = app(order);
    c.bind(binding);
    c.cf_restart();
    assert!(!c.is_held());
    c.restarts = 0;
    c.rollouts.clear();
    c
}

type Scenario = (&'static str, fn(Order) -> Row);

fn scenarios() -> Vec<Scenario> {
    vec![
        ("bind one service to a running 3-instance app", |o| {
            let mut c = app(o);
            assert!(c.bind(&upsi()));
            assert_held(&c, &format!("+{}", upsi().name));
            assert_eq!(c.template_bindings(), [upsi().name]);
            measure(&mut c, None)
        }),
        ("bind three services in a row", |o| {
            let mut c = app(o);
            for b in [upsi(), orders_db(), cache()] {
                assert!(c.bind(&b));
            }
            assert_held(&c, &format!("+{} +orders-db +cache", upsi().name));
            measure(&mut c, None)
        }),
        ("unbind, then scale up", |o| {
            let mut c = running_with(o, &orders_db());
            assert!(c.unbind(&orders_db()));
            assert_held(&c, "-orders-db");
            assert!(
                c.template_bindings().is_empty(),
                "the removed binding is not kept"
            );
            assert!(c.scale(4));
            measure(&mut c, None)
        }),
        (
            "unbind the last binding, then the runner drops SERVICE_BINDING_ROOT",
            |o| {
                let mut c = running_with(o, &orders_db());
                assert!(c.unbind(&orders_db()));
                assert!(c.runner(INSTANCES));
                assert_held(&c, "-orders-db");
                let env = c
                    .sts
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
        ),
        ("bind, then cf scale -i 4", |o| {
            let mut c = app(o);
            c.bind(&orders_db());
            assert!(c.scale(4));
            assert_held(&c, "+orders-db");
            assert_eq!(
                c.pod_bindings()[3],
                ["orders-db"],
                "the new pod sees the binding"
            );
            measure(&mut c, None)
        }),
        ("bind, then delete a pod", |o| {
            let mut c = app(o);
            c.bind(&orders_db());
            c.delete_pod(1);
            assert_eq!(
                c.pod_bindings()[1],
                ["orders-db"],
                "the recreated pod sees the binding"
            );
            measure(&mut c, None)
        }),
        ("bind, then the runner writes three times", |o| {
            let mut c = app(o);
            c.bind(&orders_db());
            let held = c.sts.clone();
            for _ in 0..3 {
                assert!(c.runner(INSTANCES));
            }
            assert_held(&c, "+orders-db");
            assert_eq!(
                c.sts, held,
                "the runner's writes change nothing: no write loop"
            );
            assert!(c.unchanged_writes >= 3);
            measure(&mut c, None)
        }),
        ("bind two, then a rolling deploy", |o| {
            let mut c = app(o);
            c.bind(&upsi());
            c.bind(&orders_db());
            let row = measure(
                &mut c,
                Some(&|c| {
                    assert!(c.rolling_deploy());
                }),
            );
            assert_released(&c);
            row
        }),
        ("bind, then kubectl rollout restart", |o| {
            let mut c = app(o);
            c.bind(&orders_db());
            let row = measure(
                &mut c,
                Some(&|c| {
                    assert!(c.rollout_restart());
                }),
            );
            assert_released(&c);
            row
        }),
        ("bind while a rolling deploy is half done", |o| {
            let mut c = app(o);
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
        }),
        ("bind, then cf restart", |o| {
            let mut c = app(o);
            c.bind(&orders_db());
            let row = measure(
                &mut c,
                Some(&|c| {
                    assert!(c.cf_restart());
                }),
            );
            assert!(!c.is_held(), "the new StatefulSet carries no hold");
            row
        }),
        ("credential rotation, then cf scale -i 4", |o| {
            let mut c = running_with(o, &orders_db());
            c.rotate(&orders_db(), "orders-db-rotated");
            assert_held(&c, "~orders-db");
            assert!(c.scale(4));
            measure(&mut c, None)
        }),
        (
            "bind inside a maintenance window (the bind is the restage)",
            |o| {
                let always = json!({"maintenanceWindows": [{"days": ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"], "start": "00:00", "end": "00:00"}]});
                let mut c =
                    Cluster::new(policy_under_test(), Deployment::Defer, o, always, INSTANCES);
                let row = measure(
                    &mut c,
                    Some(&|c| {
                        assert!(c.bind(&orders_db()));
                    }),
                );
                assert!(!c.is_held(), "rolls now");
                row
            },
        ),
        (
            "reject mode: bind, then cf scale -i 4, then cf restart",
            |o| {
                let mut c = Cluster::new(
                    policy_under_test(),
                    Deployment::Reject,
                    o,
                    json!({}),
                    INSTANCES,
                );
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
        ),
    ]
}

fn render(rows: &[(&str, Row)]) -> String {
    let mut out = String::from(
        "| scenario (3 instances) | pods restarted before the restage | at the restage: restarts / rollouts | pods at the end see | refused writes |\n|---|---|---|---|---|\n",
    );
    for (name, row) in rows {
        let at = row
            .at_restage
            .map_or("—".to_string(), |(r, n)| format!("{r} / {n}"));
        out.push_str(&format!(
            "| {name} | {} | {at} | {} | {} |\n",
            row.restarts_before, row.pods_see, row.refused
        ));
    }
    out
}

#[test]
fn binding_changes_restart_nothing_until_the_restage_in_either_webhook_order() {
    let mut rows = Vec::new();
    for (name, run) in scenarios() {
        let real = run(Order::PolicyFirst);
        let swapped = run(Order::ProjectorFirst);
        assert_eq!(real, swapped, "{name}: the webhook order changes nothing");
        rows.push((name, real));
    }
    for (name, row) in &rows {
        let reject_mode = name.starts_with("reject mode");
        assert_eq!(
            row.restarts_before, 0,
            "{name}: no restart before the restage"
        );
        if let Some((restarts, rollouts)) = row.at_restage {
            if !name.contains("half done") {
                assert_eq!(rollouts, 1, "{name}: exactly one rollout at the restage");
                assert_eq!(restarts, INSTANCES as usize, "{name}: every pod once");
            }
        }
        assert_eq!(
            row.refused > 0,
            reject_mode,
            "{name}: refused writes only in reject mode"
        );
    }
    check_readme(&render(&rows));
}

/// The README's table is this run's; `BLESS=1` writes it.
fn check_readme(table: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&path).expect("README.md");
    let (begin, end) = ("<!-- scenarios:begin -->\n", "<!-- scenarios:end -->");
    let start = readme
        .find(begin)
        .expect("README has the scenarios:begin marker")
        + begin.len();
    let stop = readme
        .find(end)
        .expect("README has the scenarios:end marker");
    if std::env::var_os("BLESS").is_some() {
        let updated = format!("{}{table}{}", &readme[..start], &readme[stop..]);
        std::fs::write(&path, updated).expect("writable README");
        return;
    }
    assert!(
        readme[start..stop] == *table,
        "README's scenario table differs from this run:\n{table}\nrun `BLESS=1 make test` to update it"
    );
}
