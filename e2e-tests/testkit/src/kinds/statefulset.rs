//! `StatefulSet`: Korifi's app workload, held with `updateStrategy: OnDelete`.

use restage_gate::workload::{self, Workload};
use serde_json::{json, Value};

use crate::descriptor::{rolls, Descriptor, Owner, Scale};
use crate::simulation::{Controller, Pods};

pub struct StatefulSet;

impl Descriptor for StatefulSet {
    fn workload(&self) -> &'static dyn Workload {
        &workload::StatefulSet
    }

    fn fixture(&self) -> Value {
        crate::korifi::unbound()
    }

    fn owner(&self) -> Owner {
        Owner::Korifi
    }

    fn scale(&self) -> Scale {
        Scale::Owner
    }

    fn scale_to_four(&self) -> &'static str {
        "cf scale -i 4"
    }

    fn controller(&self) -> Box<dyn Controller> {
        Box::new(StatefulSetController)
    }
}

/// Pods created from the current template, rolled one by one under RollingUpdate (highest
/// ordinal first, down to the partition), never under OnDelete.
struct StatefulSetController;

impl Controller for StatefulSetController {
    fn reconcile(
        &mut self,
        sts: &Value,
        revision: usize,
        replicas: usize,
        pods: &mut dyn Pods,
    ) -> Value {
        pods.fill(replicas, revision);
        let strategy = &sts["spec"]["updateStrategy"];
        if rolls(strategy) {
            let partition = strategy
                .pointer("/rollingUpdate/partition")
                .and_then(Value::as_u64)
                .unwrap_or(0) as usize;
            pods.roll(revision, &|pod| pod.ordinal >= partition);
        }
        let updated = pods.updated(revision);
        let name = |r: usize| format!("app-rev-{r}");
        let mut status = json!({
            "observedGeneration": sts["metadata"]["generation"],
            "replicas": pods.count(),
            "updatedReplicas": updated,
            "updateRevision": name(revision),
            "currentRevision": sts.pointer("/status/currentRevision").cloned().unwrap_or(json!(name(revision))),
        });
        if updated == replicas {
            status["currentRevision"] = json!(name(revision));
        }
        status
    }
}
