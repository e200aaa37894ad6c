//! A test model of what a cluster does with each write to an app's StatefulSet, driving the
//! compiled policy: the API server's admission chain (mutating webhooks in configuration-name
//! order, then validating), the servicebinding.io projector webhook and reconciler, Korifi's
//! statefulset-runner, kubectl, and the StatefulSet controller with its pods.

use std::collections::{BTreeMap, BTreeSet};

use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::guest::Guest;
use serde_json::{json, Value};

use crate::admission::statefulset_request;
use crate::host::Module;
use crate::korifi::{desired, rollout_restart, runner_write};
use crate::projector::{project, unproject, Binding};

/// Where the projector's mutating webhook runs relative to restage-gate's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The real order: `clusterwide-restage-gate` sorts before `servicebinding-…`.
    PolicyFirst,
    ProjectorFirst,
}

/// How the policy is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployment {
    /// `mode: defer`, `mutating: true`: runs in the mutating phase.
    Defer,
    /// `mode: reject`, `mutating: false`: runs in the validating phase, on the final object.
    Reject,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pod {
    pub ordinal: usize,
    /// Index into the revisions the controller has seen.
    pub revision: usize,
}

/// A write the API server refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub writer: String,
    pub message: String,
}

pub struct Cluster {
    module: &'static Module,
    settings: Value,
    deployment: Deployment,
    order: Order,
    /// The stored StatefulSet, status included.
    pub sts: Option<Value>,
    /// Live ServiceBindings, by uid: what the projector webhook projects.
    live: BTreeMap<String, Binding>,
    /// Secrets that exist.
    secrets: BTreeSet<String>,
    /// Pod templates by revision, in the order the controller first saw them.
    revisions: Vec<Value>,
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
    /// Writes that stored an object identical to the one stored before.
    pub unchanged_writes: usize,
    version: u32,
    /// Pods the controller may replace per reconcile; `None` settles completely.
    pub step: Option<usize>,
}

impl Cluster {
    /// A running app: the runner's desired StatefulSet for version 0, created with `replicas`
    /// pods.
    pub fn new(
        module: &'static Module,
        deployment: Deployment,
        order: Order,
        settings: Value,
        replicas: u32,
    ) -> Self {
        let mut settings = settings;
        settings["mode"] = json!(match deployment {
            Deployment::Defer => "defer",
            Deployment::Reject => "reject",
        });
        let mut cluster = Cluster {
            module,
            settings,
            deployment,
            order,
            sts: None,
            live: BTreeMap::new(),
            secrets: BTreeSet::new(),
            revisions: Vec::new(),
            pods: Vec::new(),
            restarts: 0,
            rollouts: BTreeSet::new(),
            refused: Vec::new(),
            stuck: Vec::new(),
            warnings: Vec::new(),
            unchanged_writes: 0,
            version: 0,
            step: None,
        };
        cluster.create(desired(0, replicas));
        cluster
    }

    fn current(&self) -> Value {
        self.sts.clone().unwrap_or(Value::Null)
    }

    fn replicas(&self) -> u32 {
        let replicas = self
            .current()
            .pointer("/spec/replicas")
            .and_then(Value::as_u64);
        replicas.map_or(1, |r| r as u32)
    }

    fn evaluate(&mut self, operation: &str, old: &Value, new: &Value) -> Outcome {
        let request = statefulset_request(operation, old, new);
        let response = self
            .module
            .validate(&json!({"settings": self.settings, "request": request}))
            .unwrap_or_else(
                |e| json!({"accepted": false, "message": format!("policy error: {e}")}),
            );
        let outcome = Outcome::new(&request, &response);
        self.warnings.extend(outcome.warnings.iter().cloned());
        outcome
    }

    /// The API server's admission chain for one write; the object to store, or the refusal.
    fn admit(&mut self, writer: &str, operation: &str, object: Value) -> Option<Value> {
        let old = self.current();
        let mut object = object;
        let hooks = match self.order {
            Order::PolicyFirst => ["policy", "projector"],
            Order::ProjectorFirst => ["projector", "policy"],
        };
        for hook in hooks {
            if hook == "projector" {
                for binding in self.live.values() {
                    project(&mut object, binding);
                }
            } else if self.deployment == Deployment::Defer {
                let outcome = self.evaluate(operation, &old, &object);
                if !outcome.allowed {
                    return self.refuse(writer, outcome);
                }
                object = outcome.object;
            }
        }
        if self.deployment == Deployment::Reject {
            let outcome = self.evaluate(operation, &old, &object);
            if !outcome.allowed {
                return self.refuse(writer, outcome);
            }
        }
        Some(object)
    }

    fn refuse(&mut self, writer: &str, outcome: Outcome) -> Option<Value> {
        self.refused.push(Refusal {
            writer: writer.into(),
            message: outcome.message.unwrap_or_default(),
        });
        None
    }

    /// An UPDATE of the whole object; the controller reacts. Whether it was stored.
    pub fn update(&mut self, writer: &str, object: Value) -> bool {
        let old = self.current();
        let Some(mut object) = self.admit(writer, "UPDATE", object) else {
            return false;
        };
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
            return true;
        }
        let version = old["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse::<u64>().ok());
        object["metadata"]["resourceVersion"] = json!((version.unwrap_or(0) + 1).to_string());
        self.sts = Some(object);
        self.reconcile();
        true
    }

    fn create(&mut self, object: Value) -> bool {
        let Some(mut object) = self.admit("create", "CREATE", object) else {
            return false;
        };
        object["metadata"]["generation"] = json!(1);
        object["metadata"]["resourceVersion"] = json!("1");
        if let Some(meta) = object["metadata"].as_object_mut() {
            meta.remove("deletionTimestamp");
        }
        object.as_object_mut().map(|o| o.remove("status"));
        self.sts = Some(object);
        self.reconcile();
        true
    }

    // ---- writers ----

    /// `cf bind-service`: the binding secret exists, the ServiceBinding is created, and the
    /// servicebinding reconciler PUTs the workload with the projection.
    pub fn bind(&mut self, binding: &Binding) -> bool {
        self.secrets.insert(binding.secret.clone());
        self.live.insert(binding.uid.clone(), binding.clone());
        let mut sts = self.current();
        project(&mut sts, binding);
        self.update("servicebinding reconciler", sts)
    }

    /// `cf unbind-service`: the reconciler unprojects and the binding secret is deleted.
    pub fn unbind(&mut self, binding: &Binding) -> bool {
        self.live.remove(&binding.uid);
        let mut sts = self.current();
        unproject(&mut sts, &binding.uid, true);
        let stored = self.update("servicebinding reconciler", sts);
        self.secrets.remove(&binding.secret);
        stored
    }

    /// Credential rotation: the binding now points at a new secret; the old one is deleted.
    pub fn rotate(&mut self, binding: &Binding, new_secret: &str) -> Binding {
        let mut rotated = binding.clone();
        rotated.secret = new_secret.into();
        self.secrets.insert(rotated.secret.clone());
        self.live.insert(rotated.uid.clone(), rotated.clone());
        let mut sts = self.current();
        project(&mut sts, &rotated);
        self.update("servicebinding reconciler", sts);
        self.secrets.remove(&binding.secret);
        rotated
    }

    /// Korifi's statefulset-runner reconciling the app at `replicas` instances.
    pub fn runner(&mut self, replicas: u32) -> bool {
        let write = runner_write(&self.current(), &desired(self.version, replicas));
        self.update("statefulset-runner", write)
    }

    /// `cf scale -i N`: the runner writes the new instance count.
    pub fn scale(&mut self, replicas: u32) -> bool {
        self.runner(replicas)
    }

    /// `cf push --strategy rolling`: a new droplet and process version, written by the runner.
    pub fn rolling_deploy(&mut self) -> bool {
        self.version += 1;
        let replicas = self.replicas();
        self.runner(replicas)
    }

    /// `kubectl rollout restart`.
    pub fn rollout_restart(&mut self) -> bool {
        let mut sts = self.current();
        rollout_restart(
            &mut sts,
            &format!("2026-12-02T12:00:{:02}Z", self.rollouts.len()),
        );
        self.update("kubectl rollout restart", sts)
    }

    /// `cf restart` (and `cf restage`, `cf push`): the StatefulSet is deleted and created anew.
    pub fn cf_restart(&mut self) -> bool {
        let replicas = self.replicas();
        let running = self.pods.len();
        self.sts = None;
        self.pods.clear();
        let created = self.create(desired(self.version, replicas));
        if let Some(template) = self.sts.as_ref().map(|s| s["spec"]["template"].clone()) {
            let revision = self.revision_of(template);
            self.restarts += running;
            self.rollouts.insert(revision);
        }
        created
    }

    /// A pod deleted (eviction, `cf restart-app-instance`); the controller recreates it.
    pub fn delete_pod(&mut self, ordinal: usize) {
        self.pods.retain(|p| p.ordinal != ordinal);
        self.reconcile();
    }

    // ---- the StatefulSet controller ----

    /// Pods follow the stored StatefulSet: created from the current template, rolled one by one
    /// under RollingUpdate (highest ordinal first), never under OnDelete.
    pub fn reconcile(&mut self) {
        let Some(sts) = self.sts.clone() else {
            return;
        };
        let revision = self.revision_of(sts["spec"]["template"].clone());
        let replicas = self.replicas() as usize;
        self.pods.retain(|p| p.ordinal < replicas);
        for ordinal in 0..replicas {
            if !self.pods.iter().any(|p| p.ordinal == ordinal) {
                self.start_pod(ordinal, revision);
                self.pods.push(Pod { ordinal, revision });
            }
        }
        self.pods.sort_by_key(|p| p.ordinal);
        let strategy = &sts["spec"]["updateStrategy"];
        if strategy["type"].as_str().unwrap_or("RollingUpdate") == "RollingUpdate" {
            let partition = strategy
                .pointer("/rollingUpdate/partition")
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize;
            let mut budget = self.step.unwrap_or(usize::MAX);
            for i in (0..self.pods.len()).rev() {
                let pod = self.pods[i].clone();
                if budget == 0 || pod.ordinal < partition || pod.revision == revision {
                    continue;
                }
                budget -= 1;
                self.start_pod(pod.ordinal, revision);
                self.pods[i].revision = revision;
                self.restarts += 1;
                self.rollouts.insert(revision);
            }
        }
        let updated = self.pods.iter().filter(|p| p.revision == revision).count();
        let name = |r: usize| format!("app-rev-{r}");
        let mut status = json!({
            "observedGeneration": sts["metadata"]["generation"],
            "replicas": self.pods.len(),
            "updatedReplicas": updated,
            "updateRevision": name(revision),
            "currentRevision": sts.pointer("/status/currentRevision").cloned().unwrap_or(json!(name(revision))),
        });
        if updated == replicas {
            status["currentRevision"] = json!(name(revision));
        }
        if let Some(stored) = self.sts.as_mut() {
            stored["status"] = status;
        }
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
        self.current()
            .pointer("/metadata/annotations")?
            .get(key)?
            .as_str()
            .map(str::to_string)
    }

    pub fn is_held(&self) -> bool {
        self.current()
            .pointer("/metadata/labels/restage-gate.io~1held")
            == Some(&json!("true"))
    }

    pub fn strategy(&self) -> Value {
        self.current()["spec"]["updateStrategy"].clone()
    }
}

/// Secrets a template mounts (secret volumes and projected secret sources).
fn mounted_secrets(template: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for volume in template
        .pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(s) = volume.pointer("/secret/secretName").and_then(Value::as_str) {
            out.push(s.to_string());
        }
        for source in volume
            .pointer("/projected/sources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(s) = source.pointer("/secret/name").and_then(Value::as_str) {
                out.push(s.to_string());
            }
        }
    }
    out
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
