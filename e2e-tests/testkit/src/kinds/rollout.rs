//! `Rollout` (Argo Rollouts, canary): held with `spec.paused: true`. A paused canary creates
//! its new ReplicaSet at 0 replicas and scales the stable one, so an unbind or a secret switch
//! rolls now; a blue-green Rollout and one with `spec.workloadRef` are declined.

use restage_gate::workload::{self, Workload};
use serde_json::{json, Value};

use crate::descriptor::{Declined, Descriptor, Owner, Scale};
use crate::simulation::{Controller, Pods};

pub struct Rollout;

impl Descriptor for Rollout {
    fn workload(&self) -> &'static dyn Workload {
        &workload::Rollout
    }

    fn fixture(&self) -> Value {
        crate::fixtures::fixture("workloads/rollout-unbound.json")
    }

    /// kubectl's `rollout` verbs do not know a Rollout: unpausing is a patch.
    fn apply_now(&self, namespace: &str, name: &str) -> String {
        format!(
            r#"kubectl patch rollout/{name} -n {namespace} --type merge -p '{{"spec":{{"paused":false}}}}'"#
        )
    }

    /// A template annotation change, which restages it.
    fn restart(&self, namespace: &str, name: &str) -> String {
        format!(
            r#"kubectl patch rollout/{name} -n {namespace} --type merge -p '{{"spec":{{"template":{{"metadata":{{"annotations":{{"kubectl.kubernetes.io/restartedAt":"'"$(date -u +%FT%TZ)"'"}}}}}}}}}}'"#
        )
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

    fn deploy_command(&self) -> &'static str {
        "kubectl argo rollouts set image"
    }

    fn resume_command(&self) -> &'static str {
        "Argo CD's resume action"
    }

    /// Argo CD's resume action, or `kubectl patch` with `{"spec":{"paused":false}}`.
    fn resumed(&self, object: &Value) -> Option<Value> {
        let mut object = object.clone();
        object["spec"]["paused"] = json!(false);
        Some(object)
    }

    /// kubectl has no restarter for a Rollout.
    fn restart_refused(&self, _object: &Value) -> bool {
        true
    }

    fn declined(&self) -> Vec<Declined> {
        vec![
            Declined {
                title: "a blue-green Rollout",
                edit: |mut object| {
                    object["spec"]["strategy"] = json!({"blueGreen": {"activeService": "orders", "autoPromotionEnabled": true}});
                    object
                },
            },
            Declined {
                title: "a Rollout with spec.workloadRef",
                edit: |mut object| {
                    if let Some(spec) = object["spec"].as_object_mut() {
                        spec.remove("template");
                        spec.remove("selector");
                    }
                    object["spec"]["workloadRef"] =
                        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "orders"});
                    object
                },
            },
        ]
    }

    fn controller(&self) -> Box<dyn Controller> {
        Box::new(RolloutController::default())
    }
}

/// Argo Rollouts' controller. Canary: unpaused, a new template rolls every pod (the steps'
/// timed pauses elapse at once: the model has no clock) and becomes stable once all run it;
/// paused, the new ReplicaSet stays at 0 and every pod created meanwhile comes from the stable
/// one. Blue-green: the new ReplicaSet is scaled up and promoted, paused or not. With
/// `workloadRef`, pods come from the referenced Deployment's template, which the model does
/// not change: they stay at the stable revision.
#[derive(Default)]
struct RolloutController {
    /// The revision of the stable ReplicaSet.
    stable: Option<usize>,
}

impl Controller for RolloutController {
    fn reconcile(
        &mut self,
        rollout: &Value,
        revision: usize,
        replicas: usize,
        pods: &mut dyn Pods,
    ) -> Value {
        let spec = &rollout["spec"];
        let stable = *self.stable.get_or_insert(revision);
        let current = if spec["workloadRef"].is_object() {
            stable
        } else {
            revision
        };
        pods.fill(replicas, stable);
        let paused = spec["paused"] == json!(true);
        if spec["strategy"]["blueGreen"].is_object() || !paused {
            pods.roll(current, &|_| true);
        }
        if pods.updated(current) == pods.count() {
            self.stable = Some(current);
        }
        let stable = self.stable.unwrap_or(current);
        json!({
            "observedGeneration": rollout["metadata"]["generation"].as_u64().map(|g| g.to_string()),
            "replicas": pods.count(),
            "updatedReplicas": pods.updated(current),
            "currentPodHash": pod_hash(current),
            "stableRS": pod_hash(stable),
            "phase": if paused { "Paused" } else if stable == current { "Healthy" } else { "Progressing" },
        })
    }
}

/// What stands for the pod-template hash of a revision.
fn pod_hash(revision: usize) -> String {
    format!("{:x}", 0x5c4b_7f8d9_usize + revision)
}
