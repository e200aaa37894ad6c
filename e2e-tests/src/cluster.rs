//! A test model of what a cluster does with each write to a workload, driving the compiled
//! policy: the API server's admission chain (the ClusterAdmissionPolicies installed, mutating
//! webhooks in configuration-name order, then validating), the servicebinding.io projector
//! webhook and reconciler, Korifi's statefulset-runner, kubectl, restage-gate's window job, and
//! the workload's controller with its pods, which its kind's test-kit descriptor brings
//! (`restage_gate_testkit::descriptor`).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use restage_gate::markers::{RELEASE_ANNOTATION, RELEASE_IN_WINDOW};
use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::guest::Guest;
use restage_gate_testkit::admission::{request, validation_request};
use restage_gate_testkit::descriptor::{Descriptor, Owner, Scale};
use restage_gate_testkit::hold;
use restage_gate_testkit::korifi::{desired, runner_write};
use restage_gate_testkit::kubectl;
use restage_gate_testkit::lookup;
use restage_gate_testkit::pod::mounted_secrets;
use restage_gate_testkit::projector::{project, unproject, Binding};
use restage_gate_testkit::simulation::{self, Pods};
use serde_json::{json, Value};

use crate::host::Module;

/// Where the projector's mutating webhook runs relative to the mutating policies'. The API
/// server calls mutating webhooks in the order of their configurations' names. Kubewarden names
/// a ClusterAdmissionPolicy's configuration `clusterwide-<policy>` before 1.37.2 and
/// `kw.cap.<policy>` since; both sort before the projector's
/// `servicebinding-admission-projector`. Mutating policies keep their name order among
/// themselves in either order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The real order: every mutating policy, then the projector.
    PolicyFirst,
    /// The projector, then every mutating policy.
    ProjectorFirst,
}

/// How the one policy of `Cluster::new` is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `mode: defer`, `mutating: true`: runs in the mutating phase.
    Defer,
    /// `mode: reject`, `mutating: false`: runs in the validating phase, on the final object.
    Reject,
}

/// The name of the policy `Cluster::new` installs, and the one `uninstall` deletes.
pub const POLICY_NAME: &str = "restage-gate";

/// The writer of restage-gate's window job (a CronJob running `kubectl annotate`).
const WINDOW_JOB: &str = "restage-gate window job";

/// A ClusterAdmissionPolicy running the module under test.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// `metadata.name`: its webhook configuration's name, so its place among mutating webhooks.
    pub name: String,
    /// `spec.settings`.
    pub settings: Value,
    /// `spec.mutating`: runs in the mutating phase; otherwise after every mutating webhook, on
    /// the final object, and a mutation it answers refuses the write.
    pub mutating: bool,
    /// `spec.mode: monitor`: never refuses and never mutates; the policy server reports what it
    /// would have done (`Cluster::reports`).
    pub monitor: bool,
}

impl Policy {
    /// The one policy of `Cluster::new`: `mode` written into `settings`.
    pub fn of_mode(mode: Mode, settings: Value) -> Policy {
        let mut settings = settings;
        settings["mode"] = json!(match mode {
            Mode::Defer => "defer",
            Mode::Reject => "reject",
        });
        Policy {
            name: POLICY_NAME.into(),
            settings,
            mutating: mode == Mode::Defer,
            monitor: false,
        }
    }

    /// A ClusterAdmissionPolicy manifest as Kubewarden reads it: `spec.mode` defaults to
    /// `protect`, `spec.mutating` to false, `spec.settings` to none.
    pub fn from_manifest(manifest: &Value) -> Result<Policy, String> {
        let kind = &manifest["kind"];
        if kind != "ClusterAdmissionPolicy" {
            return Err(format!(
                "kind is {kind}, not \"ClusterAdmissionPolicy\"; give a ClusterAdmissionPolicy manifest"
            ));
        }
        let name = manifest["metadata"]["name"].as_str().ok_or_else(|| {
            format!(
                "metadata.name is {}, not a string; name the policy",
                manifest["metadata"]["name"]
            )
        })?;
        let spec = &manifest["spec"];
        let monitor = match &spec["mode"] {
            Value::Null => false,
            mode if mode == "protect" => false,
            mode if mode == "monitor" => true,
            mode => {
                return Err(format!(
                    "{name}: spec.mode is {mode}; write \"protect\" or \"monitor\""
                ))
            }
        };
        let mutating = match &spec["mutating"] {
            Value::Null => false,
            Value::Bool(mutating) => *mutating,
            other => {
                return Err(format!(
                    "{name}: spec.mutating is {other}; write true or false"
                ))
            }
        };
        let settings = match &spec["settings"] {
            Value::Null => json!({}),
            settings @ Value::Object(_) => settings.clone(),
            other => {
                return Err(format!(
                    "{name}: spec.settings is {other}; write a map of settings"
                ))
            }
        };
        Ok(Policy {
            name: name.into(),
            settings,
            mutating,
            monitor,
        })
    }
}

/// What a monitor-mode policy would have done with a write: the policy server logs it and lets
/// the write through unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    pub policy: String,
    pub writer: String,
    /// The message it would have refused the write with.
    pub refusal: Option<String>,
    pub warnings: Vec<String>,
}

/// A controller that writes the workload on each of its reconciles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Controller {
    /// Korifi's statefulset-runner, at this many instances.
    Runner(u32),
    /// The servicebinding reconciler, projecting every live ServiceBinding.
    Bindings,
}

/// The workload the app runs as: a kind the policy holds, by its test-kit descriptor.
pub type Kind = &'static dyn Descriptor;

/// Every kind the policy holds, in the order of its kinds table.
pub fn every_kind() -> Vec<Kind> {
    lookup::every()
}

pub use restage_gate_testkit::simulation::Pod;

/// A write the API server refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub writer: String,
    /// The policy that refused it.
    pub policy: String,
    pub message: String,
}

pub struct Cluster {
    module: &'static Module,
    /// The ClusterAdmissionPolicies installed, by name.
    policies: Vec<Policy>,
    order: Order,
    pub kind: Kind,
    /// The stored workload, status included.
    pub object: Option<Value>,
    /// Live ServiceBindings, by uid: what the projector webhook projects.
    live: BTreeMap<String, Binding>,
    /// Secrets that exist.
    secrets: BTreeSet<String>,
    /// Pod templates by revision, in the order the controller first saw them.
    revisions: Vec<Value>,
    /// The kind's controller (out of its place while it reconciles).
    controller: Option<Box<dyn simulation::Controller>>,
    /// A kind that runs a pod per node: the nodes.
    nodes: usize,
    pub pods: Vec<Pod>,
    /// Running pods replaced: by the controller's rolling updates, or by `cf restart`.
    pub restarts: usize,
    /// Revisions pods were replaced with (one rollout each).
    pub rollouts: BTreeSet<usize>,
    pub refused: Vec<Refusal>,
    /// Pods created from a template mounting a secret that no longer exists: they would hang
    /// in ContainerCreating.
    pub stuck: Vec<String>,
    /// Admission warnings returned to the writers.
    pub warnings: Vec<String>,
    /// What monitor-mode policies would have refused, or warned about.
    pub reports: Vec<Report>,
    /// Writes that stored an object identical to the one stored before.
    pub unchanged_writes: usize,
    version: u32,
    /// The uid a created workload gets (`with_uid`); otherwise the one its owner's object has.
    uid: Option<String>,
    /// Pods the controller may replace per reconcile; `None` settles completely.
    pub step: Option<usize>,
}

impl Cluster {
    /// A running app of `kind` with `replicas` pods (a DaemonSet: on that many nodes),
    /// created from its owner's desired workload at version 0, with one policy installed:
    /// restage-gate in `mode`, with `settings`.
    pub fn new(
        module: &'static Module,
        kind: Kind,
        mode: Mode,
        order: Order,
        settings: Value,
        replicas: u32,
    ) -> Self {
        let policy = Policy::of_mode(mode, settings);
        Cluster::with_policies(module, kind, order, vec![policy], replicas)
    }

    /// A running app as `new` makes it, with `policies` installed (none: no policy at all).
    pub fn with_policies(
        module: &'static Module,
        kind: Kind,
        order: Order,
        policies: Vec<Policy>,
        replicas: u32,
    ) -> Self {
        let mut cluster = Cluster {
            module,
            policies: Vec::new(),
            order,
            kind,
            object: None,
            live: BTreeMap::new(),
            secrets: BTreeSet::new(),
            revisions: Vec::new(),
            controller: Some(kind.controller()),
            nodes: replicas as usize,
            pods: Vec::new(),
            restarts: 0,
            rollouts: BTreeSet::new(),
            refused: Vec::new(),
            stuck: Vec::new(),
            warnings: Vec::new(),
            reports: Vec::new(),
            unchanged_writes: 0,
            version: 0,
            uid: None,
            step: None,
        };
        for policy in policies {
            cluster.apply_policy(policy);
        }
        let workload = cluster.desired(0, replicas);
        cluster.create(workload);
        cluster
    }

    /// The same app under another name, as if it had been created with it (for runs that
    /// need several workloads of one kind).
    pub fn named(mut self, name: &str) -> Self {
        if let Some(object) = self.object.as_mut() {
            object["metadata"]["name"] = json!(name);
        }
        self
    }

    /// The same app with another `metadata.uid`, as if the API server had given it that one
    /// when it created the workload, and gives it again when the workload is created anew
    /// (`cf restart`), where a real one would draw a new one: for runs that need workloads
    /// told apart by uid.
    pub fn with_uid(mut self, uid: &str) -> Self {
        if let Some(object) = self.object.as_mut() {
            object["metadata"]["uid"] = json!(uid);
        }
        self.uid = Some(uid.into());
        self
    }

    /// What the workload's owner wants at `version`: Korifi's runner's StatefulSet, or the
    /// kind's fixture with a new image.
    fn desired(&self, version: u32, replicas: u32) -> Value {
        if self.kind.owner() == Owner::Korifi {
            return desired(version, replicas);
        }
        let mut object = self.kind.fixture();
        object.as_object_mut().map(|o| o.remove("status"));
        if version > 0 {
            set_image(&mut object, version);
        }
        if self.kind.scale() != Scale::Nodes {
            object["spec"]["replicas"] = json!(replicas);
        }
        object
    }

    /// The writes only Korifi makes need an app Korifi runs.
    fn assert_korifi(&self, what: &str) {
        assert_eq!(
            self.kind.owner(),
            Owner::Korifi,
            "{what}: Korifi does not run apps as {}",
            self.kind.name()
        );
    }

    fn current(&self) -> Value {
        self.object.clone().unwrap_or(Value::Null)
    }

    fn replicas(&self) -> u32 {
        if self.kind.scale() == Scale::Nodes {
            return self.nodes as u32;
        }
        let replicas = self
            .current()
            .pointer("/spec/replicas")
            .and_then(Value::as_u64);
        replicas.map_or(1, |r| r as u32)
    }

    fn evaluate(&self, policy: &Policy, operation: &str, old: &Value, new: &Value) -> Outcome {
        let request = request(operation, old, new);
        let response = self
            .module
            .validate(&validation_request(&policy.settings, &request))
            .unwrap_or_else(
                |e| json!({"accepted": false, "message": format!("policy error: {e}")}),
            );
        Outcome::new(&request, &response)
    }

    /// The API server's admission chain for one write: the mutating webhooks in name order
    /// (the policies' and the projector's, as `order` places them), then every validating
    /// policy on the final object. The object to store, or `None` when it was refused.
    fn admit(&mut self, writer: &str, operation: &str, object: Value) -> Option<Value> {
        let old = self.current();
        let mut object = object;
        let policies = self.policies.clone();
        let mutating = policies.iter().filter(|p| p.mutating);
        if self.order == Order::PolicyFirst {
            for policy in mutating.clone() {
                object = self.call(policy, writer, operation, &old, object)?;
            }
        }
        for binding in self.live.values() {
            project(&mut object, binding);
        }
        if self.order == Order::ProjectorFirst {
            for policy in mutating {
                object = self.call(policy, writer, operation, &old, object)?;
            }
        }
        for policy in policies.iter().filter(|p| !p.mutating) {
            object = self.call(policy, writer, operation, &old, object)?;
        }
        Some(object)
    }

    /// One policy's webhook on `object`: what it lets through, as Kubewarden's policy server
    /// answers for its mode.
    fn call(
        &mut self,
        policy: &Policy,
        writer: &str,
        operation: &str,
        old: &Value,
        object: Value,
    ) -> Option<Value> {
        let outcome = self.evaluate(policy, operation, old, &object);
        if policy.monitor {
            if !outcome.allowed || !outcome.warnings.is_empty() {
                self.reports.push(Report {
                    policy: policy.name.clone(),
                    writer: writer.into(),
                    refusal: (!outcome.allowed).then(|| outcome.message.unwrap_or_default()),
                    warnings: outcome.warnings,
                });
            }
            return Some(object);
        }
        self.warnings.extend(outcome.warnings.iter().cloned());
        if !outcome.allowed {
            let message = outcome.message.unwrap_or_default();
            return self.refuse(writer, policy, message);
        }
        if policy.mutating {
            return Some(outcome.object);
        }
        if !outcome.patch.is_empty() {
            let message = format!(
                "Request rejected by policy {}. The policy attempted to mutate the request, but it is currently configured to not allow mutations.",
                policy.name
            );
            return self.refuse(writer, policy, message);
        }
        Some(object)
    }

    fn refuse(&mut self, writer: &str, policy: &Policy, message: String) -> Option<Value> {
        self.refused.push(Refusal {
            writer: writer.into(),
            policy: policy.name.clone(),
            message,
        });
        None
    }

    /// An UPDATE of the whole object; the controller reacts. Whether it was stored.
    pub fn update(&mut self, writer: &str, object: Value) -> bool {
        let Some(object) = self.admit(writer, "UPDATE", object) else {
            return false;
        };
        self.store(object);
        true
    }

    /// Stores an admitted write the way the API server does, and lets the controller react.
    fn store(&mut self, mut object: Value) {
        let old = self.current();
        // status is the controller's (a subresource): writes to the object do not change it
        object["status"] = old["status"].clone();
        object["metadata"]["generation"] = old["metadata"]["generation"].clone();
        if object["spec"] != old["spec"] {
            let generation = old["metadata"]["generation"].as_u64().unwrap_or(1) + 1;
            object["metadata"]["generation"] = json!(generation);
        }
        object["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        if object == old {
            self.unchanged_writes += 1;
            return;
        }
        let version = old["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok());
        object["metadata"]["resourceVersion"] = json!((version.unwrap_or(0) + 1).to_string());
        self.object = Some(object);
        self.reconcile();
    }

    fn create(&mut self, object: Value) -> bool {
        let Some(mut object) = self.admit("create", "CREATE", object) else {
            return false;
        };
        object["metadata"]["generation"] = json!(1);
        object["metadata"]["resourceVersion"] = json!("1");
        if let Some(uid) = &self.uid {
            object["metadata"]["uid"] = json!(uid);
        }
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("deletionTimestamp");
        }
        object.as_object_mut().map(|o| o.remove("status"));
        self.object = Some(object);
        self.reconcile();
        true
    }

    // ---- the policy ----

    /// `kubectl apply` of a ClusterAdmissionPolicy: installed, or its settings and modes
    /// replaced when one of that name is.
    pub fn apply_policy(&mut self, policy: Policy) {
        self.policies.retain(|p| p.name != policy.name);
        let at = self.policies.partition_point(|p| p.name < policy.name);
        self.policies.insert(at, policy);
    }

    /// `kubectl delete clusteradmissionpolicy NAME`: the policy leaves the admission chain;
    /// whatever it left on the workload stays.
    pub fn delete_policy(&mut self, name: &str) {
        self.policies.retain(|p| p.name != name);
    }

    /// `kubectl delete clusteradmissionpolicy restage-gate`.
    pub fn uninstall(&mut self) {
        self.delete_policy(POLICY_NAME);
    }

    // ---- writers ----

    /// `cf bind-service` (or a ServiceBinding applied): the binding secret exists, the
    /// ServiceBinding is created, and the servicebinding reconciler PUTs the workload with the
    /// projection.
    pub fn bind(&mut self, binding: &Binding) -> bool {
        self.secrets.insert(binding.secret.clone());
        self.live.insert(binding.uid.clone(), binding.clone());
        let mut object = self.current();
        project(&mut object, binding);
        self.update("servicebinding reconciler", object)
    }

    /// A ServiceBinding created whose reconciler has not written the workload yet: the
    /// projector's webhook folds it into the next write to the workload, whoever sends it.
    pub fn bind_pending(&mut self, binding: &Binding) {
        self.secrets.insert(binding.secret.clone());
        self.live.insert(binding.uid.clone(), binding.clone());
    }

    /// The servicebinding reconciler's write: every live binding projected into the stored
    /// workload.
    pub fn project_bindings(&mut self) -> bool {
        let mut object = self.current();
        for binding in self.live.values() {
            project(&mut object, binding);
        }
        self.update("servicebinding reconciler", object)
    }

    /// `cf unbind-service`: the reconciler unprojects and the binding secret is deleted.
    pub fn unbind(&mut self, binding: &Binding) -> bool {
        self.live.remove(&binding.uid);
        let mut object = self.current();
        unproject(&mut object, &binding.uid, true);
        let stored = self.update("servicebinding reconciler", object);
        self.secrets.remove(&binding.secret);
        stored
    }

    /// Credential rotation: the binding now points at a new secret; the old one is deleted.
    pub fn rotate(&mut self, binding: &Binding, new_secret: &str) -> Binding {
        let mut rotated = binding.clone();
        rotated.secret = new_secret.into();
        self.secrets.insert(rotated.secret.clone());
        self.live.insert(rotated.uid.clone(), rotated.clone());
        let mut object = self.current();
        project(&mut object, &rotated);
        self.update("servicebinding reconciler", object);
        self.secrets.remove(&binding.secret);
        rotated
    }

    /// Korifi's statefulset-runner reconciling the app at `replicas` instances.
    pub fn runner(&mut self, replicas: u32) -> bool {
        self.assert_korifi("the statefulset-runner");
        let write = runner_write(&self.current(), &desired(self.version, replicas));
        self.update("statefulset-runner", write)
    }

    /// More instances: `cf scale -i N` (the runner writes the StatefulSet), `kubectl scale` of
    /// a Deployment (the `scale` subresource, which admission webhooks on the workload do not
    /// see), or nodes joining a DaemonSet's cluster.
    pub fn scale(&mut self, replicas: u32) -> bool {
        match self.kind.scale() {
            Scale::Owner => self.runner(replicas),
            Scale::Subresource => {
                let mut object = self.current();
                object["spec"]["replicas"] = json!(replicas);
                self.store(object);
                true
            }
            Scale::Nodes => {
                self.nodes = replicas as usize;
                self.reconcile();
                true
            }
        }
    }

    /// A new version of the app: `cf push --strategy rolling` (a new droplet, written by the
    /// runner), or `kubectl set image` for the other kinds.
    pub fn rolling_deploy(&mut self) -> bool {
        self.version += 1;
        if self.kind.owner() == Owner::Korifi {
            let replicas = self.replicas();
            return self.runner(replicas);
        }
        let mut object = self.current();
        set_image(&mut object, self.version);
        self.update("kubectl set image", object)
    }

    /// `kubectl rollout restart`. kubectl itself refuses some objects (a paused Deployment:
    /// "run rollout resume first"): nothing is written.
    pub fn rollout_restart(&mut self) -> bool {
        let mut object = self.current();
        if self.kind.restart_refused(&object) {
            return false;
        }
        kubectl::rollout_restart(
            &mut object,
            &format!("2026-12-02T12:00:{:02}Z", self.rollouts.len()),
        );
        self.update("kubectl rollout restart", object)
    }

    /// `kubectl rollout resume KIND/NAME`, of a kind that has it.
    pub fn rollout_resume(&mut self) -> bool {
        let object = self
            .kind
            .resumed(&self.current())
            .unwrap_or_else(|| panic!("{} has no rollout resume", self.kind.name()));
        self.update("kubectl rollout resume", object)
    }

    /// `kubectl annotate KIND NAME key=value --overwrite`.
    pub fn annotate(&mut self, key: &str, value: &str) -> bool {
        let mut object = self.current();
        kubectl::annotate(&mut object, key, value);
        self.update("kubectl annotate", object)
    }

    /// One run of restage-gate's window job, `kubectl annotate statefulsets,daemonsets,deployments
    /// --all-namespaces -l restage-gate.io/held=true restage-gate.io/release=window --overwrite`:
    /// it writes only to a workload its selector matches. Whether it sent a write.
    pub fn window_job(&mut self) -> bool {
        if !self.is_held() {
            return false;
        }
        let mut object = self.current();
        kubectl::annotate(&mut object, RELEASE_ANNOTATION, RELEASE_IN_WINDOW);
        self.update(WINDOW_JOB, object);
        true
    }

    /// `kubectl patch KIND NAME --type merge -p PATCH` (RFC 7386).
    pub fn merge_patch(&mut self, patch: &Value) -> bool {
        let mut object = self.current();
        json_patch::merge(&mut object, patch);
        self.update("kubectl patch", object)
    }

    /// `cf restart` (and `cf restage`, `cf push`): the StatefulSet is deleted and created anew.
    pub fn cf_restart(&mut self) -> bool {
        self.assert_korifi("cf restart");
        let replicas = self.replicas();
        let running = self.pods.len();
        self.object = None;
        self.pods.clear();
        let created = self.create(desired(self.version, replicas));
        if let Some(template) = self.object.as_ref().map(|s| s["spec"]["template"].clone()) {
            let revision = self.revision_of(template);
            self.restarts += running;
            self.rollouts.insert(revision);
        }
        created
    }

    /// A pod deleted (eviction, `cf restart-app-instance`); its controller recreates it.
    pub fn delete_pod(&mut self, ordinal: usize) {
        self.pods.retain(|p| p.ordinal != ordinal);
        self.reconcile();
    }

    /// Reconciles `queue` in order, as controller-runtime does: a controller whose write is
    /// refused is requeued behind the others and, on its next reconcile, computes its write
    /// again from the stored workload; it gives up after `attempts` writes. For each controller
    /// of `queue`, the write that was stored (1: the first), or `None`.
    pub fn run_controllers(
        &mut self,
        queue: &[Controller],
        attempts: usize,
    ) -> Vec<(Controller, Option<usize>)> {
        let mut landed: Vec<(Controller, Option<usize>)> =
            queue.iter().map(|&c| (c, None)).collect();
        let mut writes = vec![0; queue.len()];
        let mut due: VecDeque<usize> = (0..queue.len()).collect();
        while let Some(i) = due.pop_front() {
            writes[i] += 1;
            let stored = match queue[i] {
                Controller::Runner(replicas) => self.runner(replicas),
                Controller::Bindings => self.project_bindings(),
            };
            if stored {
                landed[i].1 = Some(writes[i]);
            } else if writes[i] < attempts {
                due.push_back(i);
            }
        }
        landed
    }

    // ---- the controllers ----

    /// Pods follow the stored workload, by its kind's controller.
    pub fn reconcile(&mut self) {
        let Some(object) = self.object.clone() else {
            return;
        };
        let revision = self.revision_of(object["spec"]["template"].clone());
        let replicas = self.replicas() as usize;
        let Some(mut controller) = self.controller.take() else {
            return;
        };
        let status = controller.reconcile(&object, revision, replicas, self);
        self.controller = Some(controller);
        if let Some(stored) = self.object.as_mut() {
            stored["status"] = status;
        }
    }

    /// Exactly `count` pods, ordinals from 0: missing ones created from `revision`.
    fn fill(&mut self, count: usize, revision: usize) {
        self.pods.retain(|p| p.ordinal < count);
        for ordinal in 0..count {
            if !self.pods.iter().any(|p| p.ordinal == ordinal) {
                self.start_pod(ordinal, revision);
                self.pods.push(Pod { ordinal, revision });
            }
        }
        self.pods.sort_by_key(|p| p.ordinal);
    }

    /// Replaces pods not at `revision` (highest ordinal first), within the step budget.
    fn roll(&mut self, revision: usize, may_replace: &dyn Fn(&Pod) -> bool) {
        let mut budget = self.step.unwrap_or(usize::MAX);
        for i in (0..self.pods.len()).rev() {
            let pod = self.pods[i].clone();
            if budget == 0 || pod.revision == revision || !may_replace(&pod) {
                continue;
            }
            budget -= 1;
            self.start_pod(pod.ordinal, revision);
            self.pods[i].revision = revision;
            self.restarts += 1;
            self.rollouts.insert(revision);
        }
    }

    fn updated(&self, revision: usize) -> usize {
        self.pods.iter().filter(|p| p.revision == revision).count()
    }

    fn revision_of(&mut self, template: Value) -> usize {
        match self.revisions.iter().position(|t| *t == template) {
            Some(r) => r,
            None => {
                self.revisions.push(template);
                self.revisions.len() - 1
            }
        }
    }

    fn start_pod(&mut self, ordinal: usize, revision: usize) {
        for secret in mounted_secrets(&self.revisions[revision]) {
            if !self.secrets.contains(&secret) {
                self.stuck
                    .push(format!("pod {ordinal} mounts deleted secret {secret}"));
            }
        }
    }

    // ---- observations ----

    /// The binding names each pod sees, by ordinal.
    pub fn pod_bindings(&self) -> Vec<Vec<String>> {
        self.pods
            .iter()
            .map(|p| binding_names(&self.revisions[p.revision]))
            .collect()
    }

    /// The binding names the stored template projects.
    pub fn template_bindings(&self) -> Vec<String> {
        binding_names(&self.current()["spec"]["template"])
    }

    pub fn annotation(&self, key: &str) -> Option<String> {
        hold::annotation(&self.current(), key).map(str::to_string)
    }

    pub fn is_held(&self) -> bool {
        hold::is_held(&self.current())
    }

    /// The rollout control (`spec.updateStrategy`, `spec.paused`).
    pub fn control(&self) -> Value {
        let object = self.current();
        object
            .pointer(&self.kind.control_path())
            .cloned()
            .unwrap_or(Value::Null)
    }
}

impl Pods for Cluster {
    fn fill(&mut self, count: usize, revision: usize) {
        Cluster::fill(self, count, revision);
    }

    fn roll(&mut self, revision: usize, may_replace: &dyn Fn(&Pod) -> bool) {
        Cluster::roll(self, revision, may_replace);
    }

    fn updated(&self, revision: usize) -> usize {
        Cluster::updated(self, revision)
    }

    fn count(&self) -> usize {
        self.pods.len()
    }
}

/// A new image for the first container, as `kubectl set image` writes it.
fn set_image(object: &mut Value, version: u32) {
    let name = object["metadata"]["name"]
        .as_str()
        .unwrap_or("app")
        .to_string();
    object["spec"]["template"]["spec"]["containers"][0]["image"] =
        json!(format!("registry.example.com/apps/{name}:{version}"));
}

/// Binding directories mounted under `/bindings/` in the first container.
fn binding_names(template: &Value) -> Vec<String> {
    let mounts = template
        .pointer("/spec/containers/0/volumeMounts")
        .and_then(Value::as_array);
    mounts
        .into_iter()
        .flatten()
        .filter_map(|m| {
            m["mountPath"]
                .as_str()?
                .strip_prefix("/bindings/")
                .map(str::to_string)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manifest_reads_as_kubewarden_defaults_it() {
        let manifest = json!({"apiVersion": "policies.kubewarden.io/v1",
            "kind": "ClusterAdmissionPolicy", "metadata": {"name": "restage-gate-guard"},
            "spec": {"module": "registry://example/restage-gate:v0.1.0"}});
        assert_eq!(
            Policy::from_manifest(&manifest),
            Ok(Policy {
                name: "restage-gate-guard".into(),
                settings: json!({}),
                mutating: false,
                monitor: false,
            })
        );
        let mut monitor = manifest.clone();
        monitor["spec"] =
            json!({"mode": "monitor", "mutating": true, "settings": {"mode": "reject"}});
        let policy = Policy::from_manifest(&monitor).expect("a policy");
        assert!(policy.monitor && policy.mutating);
        assert_eq!(policy.settings, json!({"mode": "reject"}));
    }

    #[test]
    fn a_manifest_kubewarden_would_not_read_is_refused_naming_the_field() {
        let manifest = |spec: Value| json!({"kind": "ClusterAdmissionPolicy", "metadata": {"name": "p"}, "spec": spec});
        let cases = [
            (
                manifest(json!({"mode": "audit"})),
                "p: spec.mode is \"audit\"",
            ),
            (
                manifest(json!({"mutating": "yes"})),
                "p: spec.mutating is \"yes\"",
            ),
            (manifest(json!({"settings": []})), "p: spec.settings is []"),
            (
                json!({"kind": "AdmissionPolicy"}),
                "kind is \"AdmissionPolicy\"",
            ),
            (
                json!({"kind": "ClusterAdmissionPolicy"}),
                "metadata.name is null",
            ),
        ];
        for (manifest, want) in cases {
            let error = Policy::from_manifest(&manifest).expect_err("refused");
            assert!(error.starts_with(want), "{error}");
        }
    }

    #[test]
    fn the_shorthand_installs_one_policy_named_restage_gate() {
        let defer = Policy::of_mode(Mode::Defer, json!({"maintenanceWindows": []}));
        assert_eq!(
            (defer.name.as_str(), defer.mutating, defer.monitor),
            (POLICY_NAME, true, false)
        );
        assert_eq!(
            defer.settings,
            json!({"mode": "defer", "maintenanceWindows": []})
        );
        let reject = Policy::of_mode(Mode::Reject, json!({}));
        assert_eq!(
            (reject.mutating, &reject.settings),
            (false, &json!({"mode": "reject"}))
        );
    }
}
