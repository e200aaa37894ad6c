//! The requests the benchmarks evaluate: Korifi's writes, a Deployment's bind and unbind, and
//! binds into templates of growing size (bindings × containers).

use serde_json::{json, Value};

use restage_gate_testkit::admission::{request, validation_request};
use restage_gate_testkit::fixtures::deployment;
use restage_gate_testkit::hold::held;
use restage_gate_testkit::korifi::{
    desired, orders_db, runner_write, unbound, upsi, with_managed_fields,
};
use restage_gate_testkit::projector::{project, unproject, Binding};

/// Whether restage-gate answers with a mutated object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    Accept,
    Mutate,
}

impl Path {
    pub fn label(self) -> &'static str {
        match self {
            Path::Accept => "accept",
            Path::Mutate => "mutate",
        }
    }

    /// The most restage-gate may cost, as a multiple of the parse-only floor.
    pub fn target(self) -> f64 {
        match self {
            Path::Accept => 1.0,
            Path::Mutate => 1.3,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Case {
    pub name: String,
    pub path: Path,
    /// The `decision` audit annotation restage-gate must answer (`accepted` for none).
    pub decision: &'static str,
    /// The ValidationRequest (`{settings, request}`).
    pub payload: Value,
    pub old_template: Value,
    pub new_template: Value,
}

fn case(name: &str, path: Path, decision: &'static str, old: &Value, new: &Value) -> Case {
    Case {
        name: name.into(),
        path,
        decision,
        payload: validation_request(&json!({}), &request("UPDATE", old, new)),
        old_template: old["spec"]["template"].clone(),
        new_template: new["spec"]["template"].clone(),
    }
}

/// The app's StatefulSet with `containers` containers and `bindings` bindings projected.
pub fn sized(bindings: usize, containers: usize) -> Value {
    let mut sts = unbound();
    let first = sts["spec"]["template"]["spec"]["containers"][0].clone();
    let list: Vec<Value> = (0..containers)
        .map(|i| {
            let mut c = first.clone();
            if i > 0 {
                c["name"] = json!(format!("sidecar-{i}"));
            }
            c
        })
        .collect();
    sts["spec"]["template"]["spec"]["containers"] = json!(list);
    for i in 0..bindings {
        project(&mut sts, &synthetic(i));
    }
    sts
}

fn synthetic(i: usize) -> Binding {
    let mut b = Binding::new(
        &format!("{i:08x}-1d4a-4e8b-9c6f-0a1b2c3d4e5f"),
        &format!("service-{i}"),
        &format!("service-{i}-credentials"),
    );
    b.type_ = Some("postgresql".into());
    b
}

pub fn cases() -> Vec<Case> {
    let bound = {
        let mut s = unbound();
        project(&mut s, &upsi());
        s
    };
    let both = {
        let mut s = bound.clone();
        project(&mut s, &orders_db());
        s
    };
    let pending = format!("+{} +orders-db", upsi().name);
    let held_both = held(both.clone(), &pending, "2026-12-01T09:00:00Z");
    let mut scaled = both.clone();
    scaled["spec"]["replicas"] = json!(3);
    let mut bound_deployment = deployment();
    project(&mut bound_deployment, &orders_db());
    let mut unbound_deployment = bound_deployment.clone();
    unproject(&mut unbound_deployment, &orders_db().uid, true);
    let mut out = vec![
        case(
            "scale-only update",
            Path::Accept,
            "accepted",
            &both,
            &scaled,
        ),
        case(
            "first bind (hold)",
            Path::Mutate,
            "held",
            &unbound(),
            &bound,
        ),
        case(
            "first bind, with managedFields",
            Path::Mutate,
            "held",
            &with_managed_fields(unbound()),
            &with_managed_fields(bound.clone()),
        ),
        case(
            "runner patch while held",
            Path::Mutate,
            "held",
            &held_both,
            &runner_write(&held_both, &desired(0, 1)),
        ),
        case(
            "rolling deploy releasing a hold",
            Path::Accept,
            "released",
            &held_both,
            &runner_write(&held_both, &desired(1, 1)),
        ),
        case(
            "first bind into a Deployment (hold)",
            Path::Mutate,
            "held",
            &deployment(),
            &bound_deployment,
        ),
        case(
            "unbind from a Deployment (rolls now)",
            Path::Accept,
            "rolling",
            &bound_deployment,
            &unbound_deployment,
        ),
    ];
    for containers in [1, 8] {
        for bindings in [1, 10, 50] {
            out.push(case(
                &format!("bind #{bindings} into {containers} container(s)"),
                Path::Mutate,
                "held",
                &sized(bindings - 1, containers),
                &sized(bindings, containers),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use restage_gate_evaluation::evaluator::{payload, AdmissionRequest};

    use super::*;

    /// The benchmarks send the guest the payload policy-evaluator builds from its typed request:
    /// it must carry each case's request whole, or they would measure a smaller one.
    #[test]
    fn the_payload_policy_evaluator_builds_carries_every_cases_request_whole() {
        for case in cases() {
            let typed = AdmissionRequest::from_value(&case.payload["request"]).unwrap();
            let sent = payload(&typed, &case.payload["settings"]).unwrap();
            let text: Value = serde_json::from_str(&sent.text).unwrap();
            assert_eq!(text, case.payload, "{}", case.name);
            assert_eq!(sent.request, case.payload["request"], "{}", case.name);
        }
    }
}
