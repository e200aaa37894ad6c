//! What uses kwctl, run against `e2e-tests/kwctl-stand-in/kwctl` (so that it runs where kwctl
//! is not installed), which does what kwctl 1.35 does: the bats suite (`make e2e-tests`), `make
//! demo`'s kwctl path, and `make push` / `make pull` with kwctl against a real registry
//! (Debian's `docker-registry`, plain HTTP on 127.0.0.1, anonymous or behind a login). First,
//! that the stand-in does.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use restage_gate_demo::check_settings;
use restage_gate_demo::interpreter;
use restage_gate_demo::kwctl::Kwctl;
use restage_gate_demo::Runner;
use restage_gate_e2e::bundled;
use restage_gate_e2e::host::policy_path;
use restage_gate_e2e::programs::installed;
use restage_gate_e2e::registry::{Registry, HTPASSWD_BIN, REGISTRY_BIN};
use restage_gate_release::oci::{self, Sources};
use restage_gate_release::repository;

/// A directory whose `kwctl` is the stand-in, evaluating with this build's restage-gate-run and
/// pushing and pulling with its release tool.
fn kwctl_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kwctl-stand-in");
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        let script = format!(
            "#!/bin/sh\nRESTAGE_GATE_RUN='{}' RESTAGE_GATE_RELEASE='{}' exec '{}' \"$@\"\n",
            env!("CARGO_BIN_EXE_restage-gate-run"),
            env!("CARGO_BIN_EXE_release-tool"),
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
fn the_stand_in_writes_kwctls_answers_on_stdout_and_logs_and_refusals_on_stderr() {
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

    // kwctl prints the settings validation response, not a verdict, on stdout, and its error
    // with the message in Rust's Debug form of an Option<String>.
    let refused = kwctl_run(r#"{"mode":"later"}"#);
    assert_eq!(refused.status.code(), Some(1));
    let message = r#"settings.mode: "later" is not a mode; use "defer" or "reject""#;
    let response: serde_json::Value =
        serde_json::from_slice(&refused.stdout).expect("stdout is one JSON document");
    assert_eq!(
        response,
        serde_json::json!({"valid": false, "message": message})
    );
    let stderr = String::from_utf8_lossy(&refused.stderr);
    let error_line = format!(
        "Error: Provided settings are not valid: Some({})",
        serde_json::to_string(message).expect("a JSON string")
    );
    assert!(stderr.lines().any(|l| l == error_line), "{stderr}");
}

/// PATH with the stand-in's directory first, so that `kwctl` is the stand-in.
fn path_with_kwctl() -> std::ffi::OsString {
    std::env::join_paths(
        std::iter::once(kwctl_dir().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .expect("a PATH")
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
    let run = Command::new("bats")
        .arg(repository::root().join("e2e-tests/policy.bats"))
        .env("PATH", path_with_kwctl())
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
    // one instant for both, so both show the same settings
    let now = std::time::SystemTime::now();
    let show = |runner: &Runner| {
        let mut out = Vec::new();
        restage_gate_demo::show_at(runner, &bundled::requests_dir(), now, &mut out)
            .expect("the demo runs");
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

/// A checkout after `make annotated-policy.wasm`, to run the Makefile in: its Makefile and
/// Cargo.toml (the version), and `annotated-policy.wasm` by the project's annotator.
struct Checkout {
    dir: PathBuf,
    annotated: Vec<u8>,
}

impl Checkout {
    fn new(registry: &Registry) -> Checkout {
        let dir = registry.dir.join("checkout");
        std::fs::create_dir_all(dir.join("src")).expect("a scratch directory");
        for file in ["Makefile", "Cargo.toml"] {
            std::os::unix::fs::symlink(repository::root().join(file), dir.join(file))
                .expect("a symlink");
        }
        let annotate = Command::new(env!("CARGO_BIN_EXE_release-tool"))
            .arg("annotate")
            .arg(policy_path())
            .arg(repository::root().join("metadata.yml"))
            .arg(repository::root().join("README.md"))
            .arg(dir.join("annotated-policy.wasm"))
            .output()
            .expect("the release tool runs");
        assert!(
            annotate.status.success(),
            "{}",
            String::from_utf8_lossy(&annotate.stderr)
        );
        let annotated = std::fs::read(dir.join("annotated-policy.wasm")).expect("annotated");
        Checkout { dir, annotated }
    }

    /// A command run in the checkout with the stand-in as `kwctl` on PATH, and nothing of the
    /// caller's registry configuration: HOME is the checkout (no kwctl sources file, no Docker
    /// login), no credentials in the environment.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(&self.dir)
            .env("PATH", path_with_kwctl())
            .env("HOME", &self.dir);
        for var in [
            "KWCTL",
            "KWCTL_SOURCES",
            "DOCKER_CONFIG",
            "XDG_CONFIG_HOME",
            "REGISTRY_USERNAME",
            "REGISTRY_PASSWORD",
            "CARGO_TARGET_DIR",
            // A `make test` around this suite: the make run here has jobs of its own.
            "MAKEFLAGS",
            "MFLAGS",
            "MAKELEVEL",
        ] {
            command.env_remove(var);
        }
        command
    }

    /// `make TARGETS…` as a user with kwctl runs it after `make annotated-policy.wasm`, which
    /// `-o` keeps as it is (no build in this suite).
    fn make(&self, args: &[&str]) -> Output {
        self.command("make")
            .args(["--no-print-directory", "-o", "annotated-policy.wasm"])
            .args(args)
            .output()
            .expect("make runs")
    }

    fn kwctl(&self, args: &[&str]) -> Output {
        self.command(kwctl_dir().join("kwctl"))
            .args(args)
            .output()
            .expect("the stand-in runs")
    }

    /// That `pull` succeeded and wrote the annotated module into `file`, byte for byte.
    fn assert_pulled(&self, pull: &Output, file: &Path) {
        assert!(pull.status.success(), "{}", text(pull));
        assert!(
            std::fs::read(file).expect("pulled") == self.annotated,
            "the module comes back byte for byte"
        );
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The immutable reference `make push` prints as its last line, checked for shape.
fn pushed_reference(push: &Output, registry: &Registry) -> String {
    assert!(push.status.success(), "make push: {}", text(push));
    let stdout = String::from_utf8_lossy(&push.stdout);
    let last = stdout.lines().last().unwrap_or_default().to_string();
    let digest = last
        .strip_prefix(&format!("{}/policies/restage-gate@sha256:", registry.addr))
        .unwrap_or_default();
    assert!(
        digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()),
        "the last line is the immutable reference: {stdout}"
    );
    last
}

const TLS_TO_PLAIN_HTTP: &str = "received corrupt message of type InvalidContentType";

#[test]
fn the_stand_in_speaks_tls_to_a_registry_its_sources_do_not_list_as_insecure_as_kwctl_does() {
    let Some(registry) = Registry::start() else {
        println!("SKIPPED kwctl push/pull: `{REGISTRY_BIN}` is not installed (apt-get install docker-registry)");
        return;
    };
    let checkout = Checkout::new(&registry);
    let tagged = format!("registry://{}/policies/restage-gate:v1", registry.addr);
    let listed = checkout.dir.join("sources.yaml");
    std::fs::write(
        &listed,
        format!(
            "insecure_sources: [\"{}\"]\nsource_authorities: {{}}\n",
            registry.addr
        ),
    )
    .expect("writable");
    let listed = listed.to_str().expect("UTF-8");
    let pulled = checkout.dir.join("pulled.wasm");
    let pulled_path = pulled.to_str().expect("UTF-8");

    for refused in [
        checkout.kwctl(&["push", "-o", "json", "annotated-policy.wasm", &tagged]),
        checkout.kwctl(&["pull", "-o", pulled_path, &tagged]),
    ] {
        assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
        assert!(refused.stdout.is_empty(), "{}", text(&refused));
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert!(
            stderr.starts_with("Error: ") && stderr.contains(TLS_TO_PLAIN_HTTP),
            "{stderr}"
        );
    }

    let pushed = checkout.kwctl(&[
        "push",
        "--sources-path",
        listed,
        "-o",
        "json",
        "annotated-policy.wasm",
        &tagged,
    ]);
    assert!(pushed.status.success(), "{}", text(&pushed));
    let json: serde_json::Value =
        serde_json::from_slice(&pushed.stdout).expect("stdout is one JSON document");
    let reference = json["immutable_ref"].as_str().expect("immutable_ref");
    assert!(
        reference.starts_with(&format!("{}/policies/restage-gate@sha256:", registry.addr)),
        "{json}"
    );
    assert!(
        !pushed.stdout.ends_with(b"\n"),
        "kwctl writes the JSON without a newline"
    );

    // kwctl reads its own sources file when it is given none.
    let config = checkout.dir.join(".config/kubewarden");
    std::fs::create_dir_all(&config).expect("writable");
    std::fs::copy(listed, config.join("sources.yaml")).expect("copied");
    let pull = checkout.kwctl(&[
        "pull",
        "-o",
        pulled_path,
        &format!("registry://{reference}"),
    ]);
    checkout.assert_pulled(&pull, &pulled);
}

#[test]
fn make_push_and_pull_with_kwctl_reach_a_plain_http_loopback_registry() {
    if installed("make").is_none() {
        println!("SKIPPED make push/pull through kwctl: make is not installed");
        return;
    }
    let Some(registry) = Registry::start() else {
        println!("SKIPPED make push/pull through kwctl: `{REGISTRY_BIN}` is not installed (apt-get install docker-registry)");
        return;
    };
    let checkout = Checkout::new(&registry);
    let at = format!("REGISTRY={}/policies", registry.addr);

    let push = checkout.make(&["push", &at]);
    let reference = pushed_reference(&push, &registry);
    assert!(
        text(&push).contains("kwctl push --sources-path "),
        "through kwctl: {}",
        text(&push)
    );

    let pull = checkout.make(&["pull", &at]);
    checkout.assert_pulled(&pull, &checkout.dir.join("pulled-policy.wasm"));
    assert!(
        text(&pull).contains("kwctl pull --sources-path "),
        "through kwctl: {}",
        text(&pull)
    );

    // The reference make printed, pulled by digest with the sources file make wrote.
    let sources = checkout.make(&["-s", "kwctl-sources", &at]);
    let sources = String::from_utf8_lossy(&sources.stdout).trim().to_string();
    let by_digest = checkout.dir.join("by-digest.wasm");
    let pull = checkout.kwctl(&[
        "pull",
        "--sources-path",
        &sources,
        "-o",
        by_digest.to_str().expect("UTF-8"),
        &format!("registry://{reference}"),
    ]);
    checkout.assert_pulled(&pull, &by_digest);
}

#[test]
fn make_push_and_pull_with_kwctl_log_in_with_dockers_config() {
    const USER: &str = "releaser";
    const PASSWORD: &str = "throwaway registry password";
    // The stand-in reads Docker's config with jq.
    if let Some(missing) = ["make", "jq"].into_iter().find(|p| installed(p).is_none()) {
        println!("SKIPPED make push/pull through kwctl with a login: {missing} is not installed (apt-get install {missing})");
        return;
    }
    let Some(registry) = Registry::start_with_login(USER, PASSWORD) else {
        println!("SKIPPED make push/pull through kwctl with a login: `{REGISTRY_BIN}` or `{HTPASSWD_BIN}` is not installed (apt-get install docker-registry apache2-utils)");
        return;
    };
    let checkout = Checkout::new(&registry);
    let at = format!("REGISTRY={}/policies", registry.addr);

    let anonymous = checkout.make(&["push", &at]);
    assert!(!anonymous.status.success(), "{}", text(&anonymous));
    assert!(text(&anonymous).contains("401"), "{}", text(&anonymous));
    // kwctl takes no credentials from the release tool's variables.
    let variables = checkout
        .command("make")
        .args([
            "--no-print-directory",
            "-o",
            "annotated-policy.wasm",
            "push",
            &at,
        ])
        .env("REGISTRY_USERNAME", USER)
        .env("REGISTRY_PASSWORD", PASSWORD)
        .output()
        .expect("make runs");
    assert!(!variables.status.success(), "{}", text(&variables));

    // What `docker login 127.0.0.1:PORT` writes into ~/.docker/config.json.
    let auth = checkout
        .command("sh")
        .args(["-c", "printf %s \"$1\" | base64 -w0", "sh"])
        .arg(format!("{USER}:{PASSWORD}"))
        .output()
        .expect("base64 runs");
    let docker = checkout.dir.join(".docker");
    std::fs::create_dir_all(&docker).expect("writable");
    let mut auths = serde_json::Map::new();
    auths.insert(
        registry.addr.clone(),
        serde_json::json!({"auth": String::from_utf8_lossy(&auth.stdout)}),
    );
    std::fs::write(
        docker.join("config.json"),
        serde_json::json!({ "auths": auths }).to_string(),
    )
    .expect("writable");

    pushed_reference(&checkout.make(&["push", &at]), &registry);
    let pull = checkout.make(&["pull", &at]);
    checkout.assert_pulled(&pull, &checkout.dir.join("pulled-policy.wasm"));
}

#[test]
fn make_gives_kwctl_plain_http_for_the_registries_the_release_tool_reaches_over_plain_http() {
    if installed("make").is_none() {
        println!("SKIPPED make kwctl-sources: make is not installed");
        return;
    }
    let scratch = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("kwctl-sources");
    for registry in [
        "127.0.0.1:5000",
        "127.1.2.3",
        "localhost:5000",
        "localhost",
        "[::1]:5000",
        "[::1]",
        "127.0.0.256:5000",
        "127.0.0.01:5000",
        "127.example.com",
        "localhost.example.com:5000",
        "ghcr.io",
        "registry.example.internal:5000",
    ] {
        let out = Command::new("make")
            .current_dir(repository::root())
            .args(["-s", "--no-print-directory", "kwctl-sources"])
            .arg(format!("REGISTRY={registry}/policies"))
            .arg(format!("TARGET_DIR={}", scratch.display()))
            .env_remove("KWCTL_SOURCES")
            .env_remove("MAKEFLAGS")
            .env_remove("MFLAGS")
            .env_remove("MAKELEVEL")
            .output()
            .expect("make runs");
        assert!(out.status.success(), "{registry}: {}", text(&out));
        let printed = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(
            !printed.is_empty(),
            oci::is_loopback(registry),
            "{registry}: {printed:?}"
        );
        if !printed.is_empty() {
            let sources = Sources::read(Path::new(&printed)).expect("a kwctl sources file");
            assert_eq!(
                sources.insecure_sources.into_iter().collect::<Vec<_>>(),
                [registry.to_string()]
            );
        }
    }
}

/// `make check-settings` on the manifests and on a copy of `policy.yaml` with a mistyped field
/// and a bad window time, through kwctl (reading its refusal from stderr) and through the
/// interpreter: both report every policy alike, the refusals naming the field and the value.
#[test]
fn check_settings_reports_each_policys_settings_through_kwctl_as_through_the_interpreter() {
    let runners = [
        Runner::Kwctl(Kwctl {
            program: kwctl_dir().join("kwctl").into(),
            module: policy_path(),
        }),
        Runner::Interpreter(
            interpreter::Module::load(&policy_path()).expect("the interpreter loads policy.wasm"),
        ),
    ];
    let request = bundled::requests_dir().join("01-bind.json");
    let check = |runner: &Runner, file: &Path| {
        let mut out = Vec::new();
        let verdict = check_settings::check(runner, file, &request, &mut out);
        (String::from_utf8(out).expect("UTF-8"), verdict)
    };

    let root = repository::root();
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("the repository")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| {
            let text = std::fs::read_to_string(p).expect("readable");
            !check_settings::policies("", &text)
                .expect("YAML")
                .is_empty()
        })
        .collect();
    manifests.sort();
    assert!(
        manifests.contains(&root.join("policy.yaml")),
        "{manifests:?}"
    );
    for manifest in &manifests {
        for runner in &runners {
            let (out, verdict) = check(runner, manifest);
            assert_eq!(verdict, Ok(()), "{out}");
            assert!(
                !out.is_empty() && out.lines().all(|l| l.ends_with(": ok")),
                "{out}"
            );
        }
    }

    let policy = std::fs::read_to_string(root.join("policy.yaml")).expect("policy.yaml");
    let edit = |text: &str, from: &str, to: &str| {
        assert!(text.contains(from), "policy.yaml has no {from:?}");
        text.replacen(from, to, 1)
    };
    let typo = edit(&policy, "    mode: defer\n", "    mdoe: defer\n");
    let bad_window = edit(
        &edit(&policy, "  name: restage-gate\n", "  name: restage-gate-windows\n"),
        "    mode: defer\n",
        "    mode: defer\n    maintenanceWindows:\n      - days: [Sat]\n        start: \"25:00\"\n        end: \"04:00\"\n",
    );
    let job = "apiVersion: batch/v1\nkind: CronJob\nmetadata:\n  name: not-a-policy\n";
    let broken = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("broken-policy.yaml");
    std::fs::write(&broken, [typo, job.into(), bad_window].join("\n---\n")).expect("writable");
    let shown = broken.display();
    let reports: Vec<_> = runners.iter().map(|r| check(r, &broken)).collect();
    let (out, verdict) = &reports[0];
    let lines: Vec<&str> = out.lines().collect();
    let named = [
        "ClusterAdmissionPolicy restage-gate: settings.mdoe: unknown field;",
        "ClusterAdmissionPolicy restage-gate-windows: settings.maintenanceWindows[0].start: \"25:00\" is not a time of day;",
    ];
    assert_eq!(lines.len(), named.len(), "one line per policy: {out}");
    for (line, named) in lines.iter().zip(named) {
        assert!(line.starts_with(&format!("{shown}: {named}")), "{line}");
    }
    let error = verdict.as_ref().expect_err("refused");
    assert!(error.contains("2 of the 2 policies"), "{error}");
    assert_eq!(reports[1], reports[0], "kwctl and the interpreter");
}
