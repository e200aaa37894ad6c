//! `DaemonSet`: one pod per node, held with `updateStrategy: OnDelete`.

use restage_gate::workload::{self, Workload};
use serde_json::{json, Value};

use crate::descriptor::{rolls, Descriptor, Owner, Scale};
use crate::simulation::{Controller, Pods};

pub struct DaemonSet;

impl Descriptor for DaemonSet {
    fn workload(&self) -> &'static dyn Workload {
        &workload::DaemonSet
    }

    fn fixture(&self) -> Value {
        crate::fixtures::daemonset()
    }

    fn owner(&self) -> Owner {
        Owner::Kubectl
    }

    fn scale(&self) -> Scale {
        Scale::Nodes
    }

    fn scale_to_four(&self) -> &'static str {
        "a fourth node joins"
    }

    fn controller(&self) -> Box<dyn Controller> {
        Box::new(DaemonSetController)
    }
}

/// One pod per node, created from the current template (new nodes, deleted pods); rolled
/// under RollingUpdate, never under OnDelete.
struct DaemonSetController;

impl Controller for DaemonSetController {
    fn reconcile(
        &mut self,
        ds: &Value,
        revision: usize,
        nodes: usize,
        pods: &mut dyn Pods,
    ) -> Value {
        pods.fill(nodes, revision);
        if rolls(&ds["spec"]["updateStrategy"]) {
            pods.roll(revision, &|_| true);
        }
        let running = pods.count();
        json!({
            "observedGeneration": ds["metadata"]["generation"],
            "desiredNumberScheduled": nodes,
            "currentNumberScheduled": running,
            "numberReady": running,
            "numberAvailable": running,
            "updatedNumberScheduled": pods.updated(revision),
        })
    }
}
