//! What `make demo` shows: the bundled requests (`e2e-tests/requests/`) in the order they
//! happen to one app on Korifi, then the other kinds a servicebinding.io runtime binds to, then
//! reject mode, each with a plain-language account of the request.

/// One decision the demo shows.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// A file of `e2e-tests/requests/`.
    pub request: &'static str,
    /// The policy settings, as JSON.
    pub settings: &'static str,
    pub title: &'static str,
    pub explanation: &'static str,
}

pub const STEPS: [Step; 10] = [
    Step {
        request: "01-bind.json",
        settings: "{}",
        title: "A first bind (defer mode, the default)",
        explanation: "`cf bind-service` made the servicebinding.io projector add the binding to \
            the app's StatefulSet: a volume, its mounts and SERVICE_BINDING_ROOT. On its own \
            that restarts every pod. restage-gate lets the binding through and holds the \
            rollout: updateStrategy OnDelete, and markers saying what is pending.",
    },
    Step {
        request: "02-second-bind-while-held.json",
        settings: "{}",
        title: "A second bind while the app is held",
        explanation: "Another service is bound before the app was restarted. The hold stays; \
            only the list of pending bindings grows.",
    },
    Step {
        request: "03-runner-patch-while-held.json",
        settings: "{}",
        title: "Korifi's runner writes the held StatefulSet",
        explanation: "Korifi's statefulset-runner writes its own desired StatefulSet, without \
            the bindings or the hold, as it does whenever the app changes (the projector puts \
            the bindings back). restage-gate re-applies the hold from the stored object, so \
            the write restarts nothing.",
    },
    Step {
        request: "04-rolling-deploy-releases-hold.json",
        settings: "{}",
        title: "A rolling deploy releases the hold",
        explanation: "`cf push --strategy rolling` brings a new droplet: a change the app's \
            owner made, which rolls out as always. restage-gate releases the hold (Korifi's \
            runner wrote the default updateStrategy and no markers, so nothing is left to \
            patch), and the held bindings ride along in this one rollout.",
    },
    Step {
        request: "05-scale.json",
        settings: "{}",
        title: "A scale",
        explanation: "`cf scale -i 3` changes only the number of instances: nothing to hold, \
            accepted unchanged.",
    },
    Step {
        request: "06-daemonset-bind.json",
        settings: "{}",
        title: "A bind into a DaemonSet",
        explanation: "A DaemonSet restarts its pods on a template change too. restage-gate holds \
            it as it holds a StatefulSet, with updateStrategy OnDelete: running pods keep \
            running, and a pod for a new node, or one replacing a deleted pod, starts from the \
            current template, bindings included.",
    },
    Step {
        request: "07-deployment-bind.json",
        settings: "{}",
        title: "A bind into a Deployment",
        explanation: "A Deployment has no OnDelete. restage-gate holds its rollout by pausing \
            it (spec.paused true), and remembers that it was not paused. While paused, a \
            Deployment scales its old ReplicaSet: a pod added now starts from the old \
            template, without the new binding, until the release.",
    },
    Step {
        request: "08-deployment-unbind.json",
        settings: "{}",
        title: "An unbind from a Deployment rolls now",
        explanation: "Unbinding deletes the binding's secret. A paused Deployment would keep \
            creating pods from its old template, which still mounts that secret, and such a \
            pod would hang in ContainerCreating. So restage-gate does not hold this one: the \
            Deployment rolls now, and the warning says why.",
    },
    Step {
        request: "09-deployment-rollout-resume.json",
        settings: "{}",
        title: "kubectl rollout resume releases a held Deployment",
        explanation: "kubectl refuses to restart a paused Deployment, so `kubectl rollout \
            resume` is how its operator applies held bindings now. restage-gate takes the \
            unpause as a release: it removes its markers, and the Deployment rolls once with \
            every held binding.",
    },
    Step {
        request: "01-bind.json",
        settings: r#"{"mode":"reject"}"#,
        title: "Reject mode: the first bind again",
        explanation: "With `mode: reject` restage-gate refuses the binding change instead of \
            holding it, and says how to apply it now.",
    },
];
