//! What the tests know of a kind the policy holds: the [`Descriptor`] each kind's file in
//! `kinds/` implements. The kind itself (group, version,
//! control, annotation) comes from the policy's `restage_gate::workload::KINDS`; the descriptor
//! adds what the tests expect of it (its fixture, the patches a first hold and a release make,
//! the command that applies held changes now, whether an unbind is held), how its owner writes
//! it and how its controller runs its pods in the cluster simulation.
//!
//! Every suite finds them through `lookup`.

use std::collections::BTreeSet;

use restage_gate::workload::{Held, Workload};
use serde_json::{json, Value};

use crate::edit::{pointer, set};
use crate::hold::marker_paths;
use crate::simulation::Controller;

/// Who writes the workload's spec in the simulation, and so how the app is scaled, deployed
/// anew and restarted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Korifi's statefulset-runner, which writes its whole desired spec on every reconcile:
    /// `cf scale`, `cf push --strategy rolling`, and `cf restart` (deleted and created anew).
    Korifi,
    /// A user with kubectl: `kubectl set image` deploys and restarts.
    Kubectl,
}

/// How the workload gets more pods in the simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Its owner writes `spec.replicas` (Korifi's runner), through admission.
    Owner,
    /// `kubectl scale`: the `scale` subresource, which admission webhooks on the workload do
    /// not see.
    Subresource,
    /// Nodes join the cluster; one pod per node.
    Nodes,
}

/// An object the kind declines to hold (`Workload::holds` is false for it): the policy accepts
/// every write to it unchanged.
#[derive(Clone, Copy)]
pub struct Declined {
    /// What it is, as a test names it: `a blue-green Rollout`.
    pub title: &'static str,
    /// The owner's edit that makes the running workload one.
    pub edit: fn(Value) -> Value,
}

/// What the tests know of one kind the policy holds.
pub trait Descriptor: Sync {
    /// The kind's row in `restage_gate::workload::KINDS`.
    fn workload(&self) -> &'static dyn Workload;

    /// The unbound workload as a servicebinding.io runtime finds it.
    fn fixture(&self) -> Value;

    /// The command a reject-mode refusal gives to restart the workload with the change:
    /// `kubectl rollout restart`, unless the kind says otherwise.
    fn restart(&self, namespace: &str, name: &str) -> String {
        rollout_restart(&self.name().to_lowercase(), namespace, name)
    }

    /// The command a warning gives to apply held changes now: the restart, unless the kind
    /// says otherwise.
    fn apply_now(&self, namespace: &str, name: &str) -> String {
        self.restart(namespace, name)
    }

    /// Who writes the workload in the simulation.
    fn owner(&self) -> Owner;

    /// How it gets more pods.
    fn scale(&self) -> Scale;

    /// A scale to four pods as a scenario's title says it.
    fn scale_to_four(&self) -> &'static str;

    /// `object` after the owner's own resume of a stopped rollout, for a kind where that is a
    /// command of its own (`kubectl rollout resume`); `None` for the others.
    fn resumed(&self, _object: &Value) -> Option<Value> {
        None
    }

    /// Whether `kubectl rollout restart` refuses the object as it stands (a paused
    /// Deployment's "run rollout resume first"): nothing is written.
    fn restart_refused(&self, _object: &Value) -> bool {
        false
    }

    /// The objects of this kind the policy declines to hold, each accepted unchanged; none by
    /// default.
    fn declined(&self) -> Vec<Declined> {
        Vec::new()
    }

    /// The owner's command that deploys a new version, as a scenario's title says it.
    fn deploy_command(&self) -> &'static str {
        match self.owner() {
            Owner::Korifi => "cf push --strategy rolling",
            Owner::Kubectl => "kubectl set image",
        }
    }

    /// The owner's resume of a stopped rollout ([`Descriptor::resumed`]), as a scenario's title
    /// says it.
    fn resume_command(&self) -> &'static str {
        "kubectl rollout resume"
    }

    /// A fresh model of the kind's controller for the cluster simulation.
    fn controller(&self) -> Box<dyn Controller>;

    /// `kind` as the API names it.
    fn name(&self) -> &'static str {
        self.workload().kind()
    }

    fn group(&self) -> &'static str {
        self.workload().declared().group
    }

    fn version(&self) -> &'static str {
        self.workload().declared().version
    }

    /// `apiVersion`: `group/version`, or the version alone for the core group.
    fn api_version(&self) -> String {
        match self.group() {
            "" => self.version().to_string(),
            group => format!("{group}/{}", self.version()),
        }
    }

    /// The resource a webhook rule and kubectl name.
    fn resource(&self) -> &'static str {
        self.workload().declared().resource
    }

    /// The control's JSON pointer: `/spec/updateStrategy`, `/spec/paused`.
    fn control_path(&self) -> String {
        pointer(self.workload().control_path())
    }

    fn held_control(&self) -> Value {
        self.workload().held_control()
    }

    fn default_control(&self) -> Value {
        self.workload().default_control()
    }

    fn remembered_annotation(&self) -> &'static str {
        self.workload().remembered_annotation()
    }

    /// The control the fixture runs with (the API default where it names none).
    fn fixture_control(&self) -> Value {
        self.fixture()
            .pointer(&self.control_path())
            .cloned()
            .unwrap_or_else(|| self.default_control())
    }

    /// The JSON Patch ops of a first hold on the control of [`Descriptor::fixture`] (markers
    /// aside), from the kind's declared control.
    fn hold_ops(&self) -> Vec<Value> {
        let fixture = self.fixture();
        control_ops(
            &self.control_path(),
            fixture.pointer(&self.control_path()),
            &self.held_control(),
        )
    }

    /// The JSON Patch ops a release makes from the held control back to the API default (which
    /// every fixture runs with), markers aside.
    fn restore_ops(&self) -> Vec<Value> {
        control_ops(
            &self.control_path(),
            Some(&self.held_control()),
            &self.default_control(),
        )
    }

    /// Why a change that drops a binding secret (an unbind, a secret switch) rolls now, as the
    /// warning ends; `None` for a kind that holds it like a bind (held by its update strategy,
    /// a pod recreated meanwhile takes the current template).
    fn unbinds_roll_now(&self) -> Option<String> {
        self.pauses().then(|| {
            format!(
                "a paused {} would start new pods from the old template",
                self.name()
            )
        })
    }

    /// Whether a change that drops a binding secret is held like a bind.
    fn holds_unbinds(&self) -> bool {
        self.unbinds_roll_now().is_none()
    }

    /// Whether a pod created while the workload is held (a scale, a deleted pod) starts from
    /// the stored template, which has the held bindings (an update strategy's hold); otherwise
    /// from the old one (a pause's).
    fn new_pods_see_held_changes(&self) -> bool {
        !self.pauses()
    }

    /// `object` with the owner's own control that keeps pods from rolling (`OnDelete`, a
    /// pause), which the policy leaves alone.
    fn stopped_by_owner(&self, mut object: Value) -> Value {
        set(&mut object, &self.control_path(), self.held_control());
        object
    }

    /// Whether the kind is held with a pause flag.
    fn pauses(&self) -> bool {
        matches!(self.workload().declared().control.held, Held::Pause)
    }

    /// The paths a first hold changes on the fixture: the markers and the control's.
    fn hold_paths(&self) -> Vec<String> {
        let mut paths = marker_paths(self.workload());
        paths.extend(self.hold_ops().iter().map(op_path));
        paths.sort();
        paths
    }
}

fn op_path(op: &Value) -> String {
    op["path"].as_str().unwrap_or_default().to_string()
}

impl std::fmt::Debug for dyn Descriptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl PartialEq for dyn Descriptor {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

/// `kubectl rollout restart KIND/NAME -n NAMESPACE`.
fn rollout_restart(resource: &str, namespace: &str, name: &str) -> String {
    format!("kubectl rollout restart {resource}/{name} -n {namespace}")
}

/// The JSON Patch ops that take a control at `path` from `from` (`None`: absent) to `to`: an
/// object member by member, in key order as the policy's patch lists them.
fn control_ops(path: &str, from: Option<&Value>, to: &Value) -> Vec<Value> {
    match (from, to) {
        (None, _) => vec![json!({"op": "add", "path": path, "value": to})],
        (Some(Value::Object(from)), Value::Object(to)) => {
            let keys: BTreeSet<&String> = from.keys().chain(to.keys()).collect();
            keys.into_iter()
                .flat_map(|key| {
                    let path = format!("{path}/{key}");
                    match (from.get(key), to.get(key)) {
                        (Some(_), None) => vec![json!({"op": "remove", "path": path})],
                        (old, Some(new)) if old != Some(new) => control_ops(&path, old, new),
                        _ => Vec::new(),
                    }
                })
                .collect()
        }
        (Some(from), to) if from == to => Vec::new(),
        (Some(_), _) => vec![json!({"op": "replace", "path": path, "value": to})],
    }
}

/// An absent type counts as RollingUpdate.
pub(crate) fn rolls(strategy: &Value) -> bool {
    strategy["type"].as_str().unwrap_or("RollingUpdate") == "RollingUpdate"
}
