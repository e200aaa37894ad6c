//! The policy's black-box tests, on the shared test tooling (`restage-gate-testkit`): how a
//! response is expected to look, and the table tests of `validate`, called natively.

#[cfg(test)]
mod kinds;
#[cfg(test)]
mod properties;
#[cfg(test)]
mod recognition;
#[cfg(test)]
mod release;
#[cfg(test)]
mod validate;

use kubewarden_policy_sdk::response::ValidationResponse;
use restage_gate_testkit::admission::{request_for, validation_request};
use restage_gate_testkit::hold::annotation_path;
use restage_gate_testkit::korifi;
use restage_gate_testkit::kubectl;
use restage_gate_testkit::lookup;
use serde_json::{json, Value};

use restage_gate::clock::UtcTime;
use restage_gate::markers::PENDING_ANNOTATION;
use restage_gate::workload::Workload;
use restage_gate::{evaluate, WARNING_LIMIT};

pub use restage_gate_testkit::edit::{changed_paths, push, remove, set, with};
pub use restage_gate_testkit::fixtures::fixture;
pub use restage_gate_testkit::hold::annotation;
pub use restage_gate_testkit::korifi::{bound, orders_db, unbound, upsi};

/// Wednesday 2026-12-02T16:51:06Z.
pub const NOW: UtcTime = UtcTime(1_796_230_266);
pub const EARLIER: &str = "2026-12-01T09:00:00Z";

/// A workload as restage-gate leaves it when it holds `pending` since EARLIER, with the API
/// default control of its kind remembered.
pub fn held(object: Value, pending: &str) -> Value {
    restage_gate_testkit::hold::held(object, pending, EARLIER)
}

/// The paths a first hold changes on a fixture workload of `kind`: the markers, and its
/// control (`updateStrategy` RollingUpdate with parameters → OnDelete; a Deployment's `paused`
/// added), as its test-kit descriptor says.
pub fn hold_paths(kind: &dyn Workload) -> Vec<String> {
    lookup::of_kind(kind).hold_paths()
}

/// Settings with a maintenance window open at [`NOW`].
pub fn window_open() -> Value {
    json!({"maintenanceWindows": [{"days": ["Wed"], "start": "16:00", "end": "17:00"}]})
}

/// Settings with a maintenance window, none open at [`NOW`].
pub fn window_closed() -> Value {
    json!({"maintenanceWindows": [{"days": ["Sat", "Sun"], "start": "02:00", "end": "04:00"}]})
}

/// The kind a fixture object is of, as the API names it.
pub fn kind_of(object: &Value) -> &'static dyn Workload {
    restage_gate_testkit::hold::kind_of(object)
}

/// Whether `kind` holds a change that drops a binding secret like a bind (otherwise it rolls
/// now).
pub fn holds_unbinds(kind: &dyn Workload) -> bool {
    lookup::of_kind(kind).holds_unbinds()
}

/// What refreshing `pending` changes.
pub fn pending_path() -> Vec<String> {
    vec![annotation_path(PENDING_ANNOTATION)]
}

pub fn template_of(sts: &Value) -> &Value {
    sts.pointer("/spec/template").expect("spec.template")
}

/// Korifi's statefulset-runner writing its desired StatefulSet (version 0, one instance).
pub fn runner_write(current: &Value) -> Value {
    korifi::runner_write(current, &korifi::desired(0, 1))
}

/// A rolling deploy: process version 1 with a new droplet.
pub fn rolling_deploy(sts: &mut Value) {
    korifi::new_version(sts, 1);
}

/// The app's StatefulSet at three replicas, one of them on the new revision: a rollout under
/// way.
pub fn in_rollout() -> Value {
    with(unbound(), |s| {
        s["status"] = json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": 1,
            "currentRevision": "app-5d8f", "updateRevision": "app-7c9a"});
        s["spec"]["replicas"] = json!(3);
    })
}

/// `kubectl rollout restart`.
pub fn restarted(object: &mut Value) {
    kubectl::rollout_restart(object, "2026-12-02T16:50:00Z");
}

pub struct Request {
    pub operation: &'static str,
    pub kind: &'static str,
    pub group: &'static str,
    pub sub_resource: &'static str,
    pub old: Value,
    pub new: Value,
    pub settings: Value,
    pub now: UtcTime,
}

pub fn update(old: Value, new: Value) -> Request {
    // the kind of the request's objects (their fixture's); a request whose objects do not
    // say is about the first object the policy was written for, Korifi's StatefulSet
    let kind = [&new, &old]
        .into_iter()
        .find_map(lookup::of)
        .unwrap_or_else(|| lookup::of_fixture(&korifi::unbound()));
    Request {
        operation: "UPDATE",
        kind: kind.name(),
        group: kind.group(),
        sub_resource: "",
        old,
        new,
        settings: json!({}),
        now: NOW,
    }
}

impl Request {
    pub fn settings(mut self, settings: Value) -> Self {
        self.settings = settings;
        self
    }

    pub fn payload(&self) -> Value {
        let mut request = request_for(self.group, self.kind, self.operation, &self.old, &self.new);
        request["subResource"] = json!(self.sub_resource);
        validation_request(&self.settings, &request)
    }

    pub fn run(&self) -> ValidationResponse {
        let bytes = serde_json::to_vec(&self.payload()).expect("serialisable");
        evaluate(&bytes, self.now)
    }
}

#[derive(Debug)]
pub enum Expect {
    /// Accepted unchanged, nothing said.
    Plain,
    /// Accepted with this mutation (exact changed paths, sorted) and `decision`.
    Mutated(&'static str, Vec<String>),
    /// Accepted unchanged, with a warning and `decision`.
    Noted(&'static str),
    /// Refused.
    Rejected,
}

pub fn check(name: &str, request: &Request, expect: Expect) -> ValidationResponse {
    let r = request.run();
    let decision = r
        .audit_annotations
        .as_ref()
        .and_then(|a| a.get("decision"))
        .cloned();
    for w in r.warnings.iter().flatten() {
        assert!(
            w.chars().count() <= WARNING_LIMIT,
            "{name}: warning too long: {w}"
        );
    }
    match expect {
        Expect::Plain => {
            assert!(r.accepted, "{name}: accepted");
            assert!(r.mutated_object.is_none(), "{name}: not mutated");
            assert!(
                r.warnings.is_none() && r.audit_annotations.is_none(),
                "{name}: silent"
            );
        }
        Expect::Mutated(want, paths) => {
            assert!(r.accepted, "{name}: accepted");
            let mutated = r
                .mutated_object
                .as_ref()
                .unwrap_or_else(|| panic!("{name}: mutated"));
            let changed: Vec<String> = changed_paths(&request.new, mutated).into_iter().collect();
            assert_eq!(changed, paths, "{name}: changed paths");
            assert_eq!(decision.as_deref(), Some(want), "{name}: decision");
            assert_eq!(
                r.warnings.as_ref().map(Vec::len),
                Some(1),
                "{name}: one warning"
            );
        }
        Expect::Noted(want) => {
            assert!(r.accepted, "{name}: accepted");
            assert!(r.mutated_object.is_none(), "{name}: not mutated");
            assert_eq!(decision.as_deref(), Some(want), "{name}: decision");
            assert_eq!(
                r.warnings.as_ref().map(Vec::len),
                Some(1),
                "{name}: one warning"
            );
        }
        Expect::Rejected => {
            assert!(!r.accepted, "{name}: rejected");
            assert_eq!(decision.as_deref(), Some("rejected"), "{name}: decision");
            assert!(r.message.is_some(), "{name}: message");
        }
    }
    r
}
