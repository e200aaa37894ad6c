//! What `make demo` shows: the bundled requests (`e2e-tests/requests/`) in the order they
//! happen to one app on Korifi, then the other kinds a servicebinding.io runtime binds to, then
//! the window job, then reject mode, each with a plain-language account of the request.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

/// One decision the demo shows.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// A file of `e2e-tests/requests/`.
    pub request: &'static str,
    pub settings: Settings,
    pub title: &'static str,
    pub explanation: &'static str,
}

/// The policy settings of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settings {
    /// These settings, as JSON.
    Json(&'static str),
    /// One maintenance window, open at the time the demo runs.
    WindowOpen,
    /// One maintenance window, not open at the time the demo runs.
    WindowClosed,
    /// One maintenance window spreading its releases over its first `SPREAD` minutes, opened
    /// this many minutes before the demo runs.
    WindowSpread { opened_minutes_ago: u64 },
}

/// The spread of the demo's spreading window, in minutes.
pub const SPREAD: u16 = 60;

impl Settings {
    /// The settings for a run at `now`: the policy reads the real clock, so a window open or
    /// closed "now" is chosen from it.
    pub fn at(self, now: SystemTime) -> Result<Value, String> {
        match self {
            Settings::Json(text) => serde_json::from_str(text).map_err(|e| format!("{text}: {e}")),
            Settings::WindowOpen => Ok(window_open()),
            Settings::WindowClosed => Ok(window_closed(now)),
            Settings::WindowSpread { opened_minutes_ago } => {
                Ok(window_opened(now, opened_minutes_ago, SPREAD))
            }
        }
    }
}

/// The days of a maintenance window, Monday first, as the settings name them.
pub const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// Settings with a window that is always open: every day, a whole day from midnight.
pub fn window_open() -> Value {
    json!({"maintenanceWindows": [{"days": DAYS, "start": "00:00", "end": "00:00"}]})
}

/// Settings with a window that is open neither on the day of `now` nor on the next (UTC): the
/// first minute of the day after.
pub fn window_closed(now: SystemTime) -> Value {
    let day = DAYS[(weekday(now) + 2) % DAYS.len()];
    json!({"maintenanceWindows": [{"days": [day], "start": "00:00", "end": "00:01"}]})
}

/// Settings with a window that opened `minutes_ago` whole minutes before the minute of `now`
/// (UTC) and lasts a whole day, spreading its releases over its first `spread` minutes.
pub fn window_opened(now: SystemTime, minutes_ago: u64, spread: u16) -> Value {
    let minute = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 60)
        .saturating_sub(minutes_ago);
    let day = DAYS[weekday(UNIX_EPOCH + Duration::from_secs(minute * 60))];
    let of_day = minute % (24 * 60);
    let start = format!("{:02}:{:02}", of_day / 60, of_day % 60);
    json!({"maintenanceWindows": [{"days": [day], "start": start, "end": start,
        "spreadMinutes": spread}]})
}

/// The UTC day of the week of `now`, Monday = 0 (1970-01-01 was a Thursday); a clock before
/// 1970 reads as the epoch, as the policy's does.
pub fn weekday(now: SystemTime) -> usize {
    let days = now
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400);
    // the remainder is below 7
    ((days + 3) % 7) as usize
}

pub const STEPS: [Step; 14] = [
    Step {
        request: "01-bind.json",
        settings: Settings::Json("{}"),
        title: "A first bind (defer mode, the default)",
        explanation: "`cf bind-service` made the servicebinding.io projector add the binding to \
            the app's StatefulSet: a volume, its mounts and SERVICE_BINDING_ROOT. On its own \
            that restarts every pod. restage-gate lets the binding through and holds the \
            rollout: updateStrategy OnDelete, and markers saying what is pending.",
    },
    Step {
        request: "02-second-bind-while-held.json",
        settings: Settings::Json("{}"),
        title: "A second bind while the app is held",
        explanation: "Another service is bound before the app was restarted. The hold stays; \
            only the list of pending bindings grows.",
    },
    Step {
        request: "03-runner-patch-while-held.json",
        settings: Settings::Json("{}"),
        title: "Korifi's runner writes the held StatefulSet",
        explanation: "Korifi's statefulset-runner writes its own desired StatefulSet, without \
            the bindings or the hold, as it does whenever the app changes (the projector puts \
            the bindings back). restage-gate re-applies the hold from the stored object, so \
            the write restarts nothing.",
    },
    Step {
        request: "04-rolling-deploy-releases-hold.json",
        settings: Settings::Json("{}"),
        title: "A rolling deploy releases the hold",
        explanation: "`cf push --strategy rolling` brings a new droplet: a change the app's \
            owner made, which rolls out as always. restage-gate releases the hold (Korifi's \
            runner wrote the default updateStrategy and no markers, so nothing is left to \
            patch), and the held bindings ride along in this one rollout.",
    },
    Step {
        request: "05-scale.json",
        settings: Settings::Json("{}"),
        title: "A scale",
        explanation: "`cf scale -i 3` changes only the number of instances: nothing to hold, \
            accepted unchanged.",
    },
    Step {
        request: "06-daemonset-bind.json",
        settings: Settings::Json("{}"),
        title: "A bind into a DaemonSet",
        explanation: "A DaemonSet restarts its pods on a template change too. restage-gate holds \
            it as it holds a StatefulSet, with updateStrategy OnDelete: running pods keep \
            running, and a pod for a new node, or one replacing a deleted pod, starts from the \
            current template, bindings included.",
    },
    Step {
        request: "07-deployment-bind.json",
        settings: Settings::Json("{}"),
        title: "A bind into a Deployment",
        explanation: "A Deployment has no OnDelete. restage-gate holds its rollout by pausing \
            it (spec.paused true), and remembers that it was not paused. While paused, a \
            Deployment scales its old ReplicaSet: a pod added now starts from the old \
            template, without the new binding, until the release.",
    },
    Step {
        request: "08-deployment-unbind.json",
        settings: Settings::Json("{}"),
        title: "An unbind from a Deployment rolls now",
        explanation: "Unbinding deletes the binding's secret. A paused Deployment would keep \
            creating pods from its old template, which still mounts that secret, and such a \
            pod would hang in ContainerCreating. So restage-gate does not hold this one: the \
            Deployment rolls now, and the warning says why.",
    },
    Step {
        request: "09-deployment-rollout-resume.json",
        settings: Settings::Json("{}"),
        title: "kubectl rollout resume releases a held Deployment",
        explanation: "kubectl refuses to restart a paused Deployment, so `kubectl rollout \
            resume` is how its operator applies held bindings now. restage-gate takes the \
            unpause as a release: it removes its markers, and the Deployment rolls once with \
            every held binding.",
    },
    Step {
        request: "10-window-release.json",
        settings: Settings::WindowClosed,
        title: "The window job's write, outside every maintenance window",
        explanation: "The DaemonSet held in step 6 is still held. A CronJob \
            (window-release.yaml) runs `kubectl annotate statefulsets,daemonsets,deployments \
            --all-namespaces -l restage-gate.io/held=true restage-gate.io/release=window \
            --overwrite` every few minutes: it asks every held workload to be released if a \
            maintenance window is open, and knows nothing of the windows itself (they are in \
            the policy's settings only). The window here, the first minute of the day after \
            tomorrow, is not open now, so restage-gate takes the annotation off again and changes nothing else: the DaemonSet stays held \
            exactly as it was, and no pod restarts.",
    },
    Step {
        request: "10-window-release.json",
        settings: Settings::WindowOpen,
        title: "The same write inside a maintenance window",
        explanation: "The same write while a window is open (here one that lasts all day, \
            every day) releases the DaemonSet, as `restage-gate.io/release=now` would at any \
            time: restage-gate puts back the updateStrategy it replaced and removes its \
            markers, and the DaemonSet rolls its pods once, with the held binding. Workloads \
            that are not held are not selected by the job, so nothing else restarts.",
    },
    Step {
        request: "10-window-release.json",
        settings: Settings::WindowSpread {
            opened_minutes_ago: 5,
        },
        title: "A window that spreads its releases, before the workload's slot",
        explanation: "A window may spread its releases (spreadMinutes: 60), so that the job's \
            ticks release held workloads a few at a time instead of all at the first. Each \
            workload gets its own minute among the first 60, from a hash of its uid: this \
            DaemonSet's is minute 33. The window opened 5 minutes ago, so the same write keeps \
            the hold, takes the annotation off again, and the warning says when the slot opens.",
    },
    Step {
        request: "10-window-release.json",
        settings: Settings::WindowSpread {
            opened_minutes_ago: 35,
        },
        title: "The same window, once the workload's slot has come",
        explanation: "35 minutes into the window the DaemonSet's minute 33 has passed: the same \
            write releases it, as in a window without a spread. A workload with another uid is \
            released by the job's first tick from its own minute.",
    },
    Step {
        request: "01-bind.json",
        settings: Settings::Json(r#"{"mode":"reject"}"#),
        title: "Reject mode: the first bind again",
        explanation: "With `mode: reject` restage-gate refuses the binding change instead of \
            holding it, and says how to apply it now.",
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_closed_window_is_on_the_day_after_tomorrow_and_the_open_one_on_every_day() {
        // 2026-11-30 was a Monday
        let monday = UNIX_EPOCH + Duration::from_secs(1_795_996_800);
        for (days, want) in [(0, "Wed"), (1, "Thu"), (5, "Mon"), (6, "Tue")] {
            let now = monday + Duration::from_secs(days * 86_400 + 86_399);
            assert_eq!(
                window_closed(now)["maintenanceWindows"][0]["days"],
                json!([want])
            );
        }
        assert_eq!(window_open()["maintenanceWindows"][0]["days"], json!(DAYS));
        // Monday 00:20 and 40 minutes: Sunday 23:40
        let opened = window_opened(monday + Duration::from_secs(20 * 60 + 59), 40, 30);
        assert_eq!(
            opened,
            json!({"maintenanceWindows": [{"days": ["Sun"], "start": "23:40",
                "end": "23:40", "spreadMinutes": 30}]})
        );
        assert_eq!(
            Settings::Json(r#"{"mode":"reject"}"#).at(monday),
            Ok(json!({"mode": "reject"}))
        );
    }
}
