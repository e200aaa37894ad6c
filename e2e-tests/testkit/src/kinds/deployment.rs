//! `Deployment`: held with `spec.paused: true`. A paused Deployment scales its old ReplicaSet,
//! so an unbind or a secret switch rolls now.

use restage_gate::workload::{self, Workload};
use serde_json::{json, Value};

use crate::descriptor::{Descriptor, Owner, Scale};
use crate::simulation::{Controller, Pods};

pub struct Deployment;

impl Descriptor for Deployment {
    fn workload(&self) -> &'static dyn Workload {
        &workload::Deployment
    }

    fn fixture(&self) -> Value {
        crate::fixtures::deployment()
    }

    /// `kubectl rollout restart` refuses a paused Deployment.
    fn apply_now(&self, namespace: &str, name: &str) -> String {
        format!("kubectl rollout resume deployment/{name} -n {namespace}")
    }

    fn owner(&self) -> Owner {
        Owner::Kubectl
    }

    fn scale(&self) -> Scale {
        Scale::Subresource
    }

    fn scale_to_four(&self) -> &'static str {
        "kubectl scale --replicas 4"
    }

    /// `kubectl rollout resume deployment/NAME`.
    fn resumed(&self, object: &Value) -> Option<Value> {
        let mut object = object.clone();
        crate::kubectl::rollout_resume(&mut object);
        Some(object)
    }

    /// "can't restart paused deployment (run rollout resume first)".
    fn restart_refused(&self, object: &Value) -> bool {
        object["spec"]["paused"] == json!(true)
    }

    fn controller(&self) -> Box<dyn Controller> {
        Box::new(DeploymentController::default())
    }
}

/// A ReplicaSet per template. Unpaused, a new template gets a new ReplicaSet and the pods roll
/// to it; paused, no ReplicaSet is created and the newest one (the old template) is the one
/// scaled, so every pod created meanwhile comes from the old template.
#[derive(Default)]
struct DeploymentController {
    /// The revision of its newest ReplicaSet, which scaling resizes.
    replica_set: Option<usize>,
}

impl Controller for DeploymentController {
    fn reconcile(
        &mut self,
        deployment: &Value,
        revision: usize,
        replicas: usize,
        pods: &mut dyn Pods,
    ) -> Value {
        let paused = deployment["spec"]["paused"] == json!(true);
        if self.replica_set.is_none() || !paused {
            self.replica_set = Some(revision);
        }
        let current = self.replica_set.unwrap_or(revision);
        pods.fill(replicas, current);
        if !paused {
            pods.roll(revision, &|_| true);
        }
        let updated = if current == revision {
            pods.updated(revision)
        } else {
            0
        };
        let progressing = if paused && current != revision {
            json!({"type": "Progressing", "status": "Unknown", "reason": "DeploymentPaused"})
        } else if updated < replicas {
            json!({"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"})
        } else {
            json!({"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"})
        };
        json!({
            "observedGeneration": deployment["metadata"]["generation"],
            "replicas": pods.count(),
            "updatedReplicas": updated,
            "conditions": [progressing],
        })
    }
}
