//! What reads kwctl's output, run against `e2e-tests/kwctl-stand-in/kwctl` (so that it runs
//! where kwctl is not installed), which writes what kwctl 1.35 writes where kwctl writes it: the bats
//! suite (`make e2e-tests`) and `make demo`'s kwctl path. First, that the stand-in does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use restage_gate_demo::interpreter;
use restage_gate_demo::kwctl::Kwctl;
use restage_gate_demo::Runner;
use restage_gate_e2e::bundled;
use restage_gate_e2e::host::policy_path;
use restage_gate_e2e::programs::installed;
use restage_gate_release::repository;

/// A directory whose `kwctl` is the stand-in, evaluating with this build's restage-gate-run.
fn kwctl_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kwctl-stand-in");
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let script = format!(
            "#!/bin/sh\nRESTAGE_GATE_RUN='{}' exec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_restage-gate-run"),
            repository::root()
                .join("e2e-tests/kwctl-stand-in/kwctl")
                .display()
        );
        let kwctl = dir.join("kwctl");
        std::fs::write(&kwctl, script).expect("writable");
        let made = Command::new("chmod").arg("755").arg(&kwctl).status();
        assert!(made.is_ok_and(|s| s.success()), "chmod {}", kwctl.display());
        dir
    })
}

fn kwctl_run(settings: &str) -> Output {
    Command::new(kwctl_dir().join("kwctl"))
        .args(["run", "--request-path"])
        .arg(bundled::requests_dir().join("01-bind.json"))
        .args(["--settings-json", settings])
        .arg(policy_path())
        .output()
        .expect("the stand-in runs")
}

#[test]
fn the_stand_in_writes_the_verdict_alone_on_stdout_and_logs_and_refusals_on_stderr() {
    let held = kwctl_run("{}");
    let stderr = String::from_utf8_lossy(&held.stderr);
    assert!(held.status.success(), "{stderr}");
    let verdict: serde_json::Value =
        serde_json::from_slice(&held.stdout).expect("stdout is one JSON document");
    assert_eq!(verdict["auditAnnotations"]["decision"], "held");
    assert!(
        stderr.contains(" INFO\u{1b}[0m"),
        "coloured log lines: {stderr:?}"
    );

    let refused = kwctl_run(r#"{"mode":"later"}"#);
    assert_eq!(refused.status.code(), Some(1));
    assert!(refused.stdout.is_empty(), "no verdict on stdout");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let error_line = r#"Error: Provided settings are not valid: settings.mode: "later" is not a mode; use "defer" or "reject""#;
    assert!(stderr.lines().any(|l| l == error_line), "{stderr}");
}

#[test]
fn the_bats_suite_passes_on_kwctls_output_streams() {
    let missing: Vec<&str> = ["bats", "jq"]
        .into_iter()
        .filter(|p| installed(p).is_none())
        .collect();
    if !missing.is_empty() {
        println!(
            "SKIPPED the bats suite on the kwctl stand-in: {} not installed (apt-get install bats jq)",
            missing.join(" and ")
        );
        return;
    }
    let path = std::env::join_paths(std::iter::once(kwctl_dir().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a PATH");
    let run = Command::new("bats")
        .arg(repository::root().join("e2e-tests/policy.bats"))
        .env("PATH", path)
        // Not a kwctl that `make test KWCTL=…` exported: the suite runs on the stand-in.
        .env("KWCTL", kwctl_dir().join("kwctl"))
        .env("RESTAGE_GATE_ANNOTATED_WASM", policy_path())
        .output()
        .expect("bats runs");
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn the_demo_through_kwctl_shows_what_the_interpreter_shows() {
    let show = |runner: &Runner| {
        let mut out = Vec::new();
        restage_gate_demo::show(runner, &bundled::requests_dir(), &mut out).expect("the demo runs");
        String::from_utf8(out).expect("UTF-8")
    };
    let kwctl = Runner::Kwctl(Kwctl {
        program: kwctl_dir().join("kwctl").into(),
        module: policy_path(),
    });
    let light = Runner::Interpreter(
        interpreter::Module::load(&policy_path()).expect("the interpreter loads policy.wasm"),
    );
    assert_eq!(show(&kwctl), show(&light));
}
