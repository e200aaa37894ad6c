//! restage-gate-webhook, run as a process and asked over HTTPS as the API server asks
//! policy-server: the bundled AdmissionReviews posted to `/validate/<policy-id>` with a
//! certificate made for the test, its answers checked against the in-process evaluation of the
//! same module, and policy-server's rules for monitor mode, `allowedToMutate`, custom messages,
//! settings the module refuses and unknown policies.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use restage_gate_e2e::bundled;
use restage_gate_e2e::host::{policy_path, policy_under_test};
use restage_gate_e2e::programs::installed;
use restage_gate_evaluation::admission::{read_request, Outcome};
use restage_gate_evaluation::guest::Guest;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::{json, Value};

const HELD_SINCE: &str = "restage-gate.io/held-since";

/// A key and a self-signed certificate for 127.0.0.1, made once per test binary with openssl;
/// `None` (the tests say SKIPPED) where openssl is not installed.
struct Tls {
    cert: PathBuf,
    key: PathBuf,
}

fn tls() -> Option<&'static Tls> {
    static TLS: OnceLock<Option<Tls>> = OnceLock::new();
    TLS.get_or_init(|| {
        installed("openssl")?;
        let dir = scratch("tls");
        // A leaf, not a CA: rustls refuses a CA certificate as a server's own.
        let config = dir.join("openssl.cnf");
        std::fs::write(
            &config,
            "[req]\ndistinguished_name = dn\nx509_extensions = leaf\nprompt = no\n\
             [dn]\nCN = restage-gate-webhook\n\
             [leaf]\nbasicConstraints = critical, CA:FALSE\n\
             keyUsage = critical, digitalSignature\nextendedKeyUsage = serverAuth\n\
             subjectAltName = IP:127.0.0.1, DNS:localhost\n",
        )
        .expect("writable");
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .arg("-config")
            .arg(&config)
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .output()
            .expect("openssl runs");
        assert!(
            made.status.success(),
            "openssl req: {}",
            String::from_utf8_lossy(&made.stderr)
        );
        Some(Tls { cert, key })
    })
    .as_ref()
}

macro_rules! tls_or_skip {
    () => {
        match tls() {
            Some(tls) => tls,
            None => {
                eprintln!("SKIPPED: openssl is not installed (apt-get install openssl)");
                return;
            }
        }
    };
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("webhook-server")
        .join(name);
    // A leftover ready file would announce a server that is gone.
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// A policies.yml entry for the module under test.
fn policy(settings: Value, extra: &str) -> String {
    format!(
        "  module: file://{}\n  settings: {settings}\n{extra}",
        policy_path().display()
    )
}

/// A running restage-gate-webhook, stopped when dropped; its stderr is collected as it comes,
/// and a waiter is woken at each line.
struct Server {
    child: Child,
    addr: SocketAddr,
    log: Arc<(Mutex<String>, Condvar)>,
}

/// A server that did not start: how it exited and what it said.
#[derive(Debug)]
struct Exited {
    status: ExitStatus,
    stderr: String,
    ready_file_written: bool,
}

impl Server {
    fn start(tls: &Tls, name: &str, policies_yml: &str) -> Result<Server, Exited> {
        let dir = scratch(name);
        let policies = dir.join("policies.yml");
        std::fs::write(&policies, policies_yml).expect("writable");
        let ready = dir.join("ready");
        let mut child = Command::new(env!("CARGO_BIN_EXE_restage-gate-webhook"))
            .arg("--policies")
            .arg(&policies)
            .arg("--cert")
            .arg(&tls.cert)
            .arg("--key")
            .arg(&tls.key)
            .args(["--listen", "127.0.0.1:0", "--ready-file"])
            .arg(&ready)
            .stderr(Stdio::piped())
            .spawn()
            .expect("restage-gate-webhook starts");
        let log = Arc::new((Mutex::new(String::new()), Condvar::new()));
        let reader = {
            let log = log.clone();
            let mut stderr = child.stderr.take().expect("piped");
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(&mut stderr).lines() {
                    let Ok(line) = line else { break };
                    let mut text = log.0.lock().unwrap_or_else(|e| e.into_inner());
                    text.push_str(&line);
                    text.push('\n');
                    log.1.notify_all();
                }
            })
        };
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            if let Ok(text) = std::fs::read_to_string(&ready) {
                let addr = text
                    .trim()
                    .parse()
                    .expect("the ready file holds an address");
                return Ok(Server { child, addr, log });
            }
            if let Some(status) = child.try_wait().expect("waitable") {
                let _ = reader.join();
                let stderr = log.0.lock().unwrap_or_else(|e| e.into_inner()).clone();
                return Err(Exited {
                    status,
                    stderr,
                    ready_file_written: ready.exists(),
                });
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server never became ready");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The first line of the server's log that contains `needle`. The server writes it before
    /// it answers, but this process reads the pipe on its own thread, so the line may arrive
    /// after the answer: wait for it (the deadline only ends a run that would hang).
    fn line_with(&self, needle: &str) -> String {
        let (text, arrived) = &*self.log;
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut text = text.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(line) = text.lines().find(|l| l.contains(needle)) {
                return line.to_string();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "no line with {needle} in {text}");
            text = arrived
                .wait_timeout(text, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Posts `body` as JSON to `path`; the HTTP status and the body of the answer.
    fn post(&self, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        self.request("POST", path, Some("application/json"), body)
    }

    /// Posts an AdmissionReview to `/validate/<policy_id>` and reads the AdmissionReview back.
    fn validate(&self, policy_id: &str, review: &[u8]) -> Value {
        let (status, body) = self.post(&format!("/validate/{policy_id}"), review);
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let answer: Value = serde_json::from_slice(&body).expect("a JSON answer");
        assert_eq!(answer["apiVersion"], "admission.k8s.io/v1");
        assert_eq!(answer["kind"], "AdmissionReview");
        answer
    }

    /// One HTTPS request on a connection of its own, trusting only the test's certificate.
    fn request(
        &self,
        method: &str,
        path: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> (u16, Vec<u8>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime.block_on(async {
            let tls = tls().expect("started with a certificate");
            let mut roots = rustls::RootCertStore::empty();
            roots
                .add(CertificateDer::from_pem_file(&tls.cert).expect("the certificate"))
                .expect("a trust anchor");
            let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("TLS versions")
                .with_root_certificates(roots)
                .with_no_client_auth();
            let tcp = tokio::net::TcpStream::connect(self.addr)
                .await
                .expect("the server accepts");
            let server_name = ServerName::from(self.addr.ip());
            let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
                .connect(server_name, tcp)
                .await
                .expect("a TLS session with the server's certificate");
            let (mut sender, connection) =
                hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .expect("HTTP/1.1");
            tokio::spawn(connection);
            let mut request = hyper::Request::builder()
                .method(method)
                .uri(path)
                .header("host", self.addr.to_string());
            if let Some(content_type) = content_type {
                request = request.header("content-type", content_type);
            }
            let request = request
                .body(Full::new(Bytes::copy_from_slice(body)))
                .expect("a request");
            let answer = sender.send_request(request).await.expect("an answer");
            let status = answer.status().as_u16();
            let body = answer.into_body().collect().await.expect("a body");
            (status, body.to_bytes().to_vec())
        })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(tls: &Tls, name: &str, policies_yml: &str) -> Server {
    Server::start(tls, name, policies_yml).unwrap_or_else(|e| panic!("did not start: {e:?}"))
}

fn bundled_review(file: &str) -> Vec<u8> {
    std::fs::read(bundled::requests_dir().join(file)).expect("a bundled request")
}

fn request_of(review: &[u8]) -> Value {
    read_request(std::str::from_utf8(review).expect("UTF-8")).expect("an AdmissionReview")
}

/// What the API server makes of an answer: the patch applied to the request's object.
fn outcome(review: &[u8], answer: &Value) -> Outcome {
    Outcome::from_admission_response(&request_of(review), &answer["response"])
        .unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// The same with the hold's start time, which the module reads from the clock, set aside: two
/// evaluations may fall on either side of a second.
fn without_clock(mut outcome: Outcome) -> Outcome {
    scrub_clock(&mut outcome.object);
    outcome.patch.iter_mut().for_each(scrub_clock);
    outcome
}

/// Replaces the held-since annotation's value, in an object or a patch operation, wherever it is.
fn scrub_clock(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(since) = map.get_mut(HELD_SINCE) {
                *since = json!("<clock>");
            }
            let path_is_held_since = map
                .get("path")
                .and_then(Value::as_str)
                .is_some_and(|p| p.ends_with(&HELD_SINCE.replace('/', "~1")));
            if path_is_held_since {
                map.insert("value".into(), json!("<clock>"));
            }
            map.values_mut().for_each(scrub_clock);
        }
        Value::Array(items) => items.iter_mut().for_each(scrub_clock),
        _ => {}
    }
}

/// An AdmissionReview answer with its patch decoded and the clock set aside, to compare whole.
fn comparable(answer: &Value) -> Value {
    let mut answer = answer.clone();
    if let Some(patch) = answer["response"]["patch"].as_str() {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .expect("base64");
        let mut ops: Value = serde_json::from_slice(&bytes).expect("a JSON patch");
        scrub_clock(&mut ops);
        answer["response"]["patch"] = ops;
    }
    answer
}

#[test]
fn every_bundled_request_is_answered_as_the_in_process_evaluation_answers_it() {
    let tls = tls_or_skip!();
    let server = start(
        tls,
        "in-process",
        &format!(
            "restage-gate:\n{}",
            policy(json!({"mode": "defer"}), "  allowedToMutate: true\n")
        ),
    );
    for path in bundled::bundled_request_paths() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let review = std::fs::read(&path).expect("readable");
        let answer = server.validate("restage-gate", &review);
        let request = request_of(&review);
        assert_eq!(answer["response"]["uid"], request["uid"], "{name}");
        let in_process = policy_under_test()
            .run(&json!({"mode": "defer"}), &request)
            .expect("the in-process evaluation");
        let served = outcome(&review, &answer);
        if name == "01-bind.json" {
            assert!(served.allowed && !served.patch.is_empty(), "{answer}");
            assert_eq!(answer["response"]["patchType"], "JSONPatch");
        }
        assert_eq!(without_clock(served), without_clock(in_process), "{name}");
    }
}

#[test]
fn the_same_request_again_gets_the_same_answer_after_another_request() {
    let tls = tls_or_skip!();
    let server = start(
        tls,
        "stateless",
        &format!(
            "restage-gate:\n{}",
            policy(json!({}), "  allowedToMutate: true\n")
        ),
    );
    let bind = bundled_review("01-bind.json");
    let first = server.validate("restage-gate", &bind);
    // Another workload's bind in between: an instance that kept anything would carry it over.
    let other = server.validate("restage-gate", &bundled_review("07-deployment-bind.json"));
    assert_ne!(comparable(&other), comparable(&first));
    let again = server.validate("restage-gate", &bind);
    assert_eq!(comparable(&again), comparable(&first));
    assert!(first["response"]["patch"].is_string(), "{first}");
}

#[test]
fn monitor_mode_allows_without_a_patch_what_protect_mode_refuses_or_changes() {
    let tls = tls_or_skip!();
    let reject = json!({"mode": "reject"});
    let server = start(
        tls,
        "monitor",
        &format!(
            "guard:\n{}guard-monitor:\n{}defer-monitor:\n{}",
            policy(reject.clone(), ""),
            policy(reject, "  policyMode: monitor\n"),
            policy(
                json!({"mode": "defer"}),
                "  policyMode: monitor\n  allowedToMutate: true\n"
            ),
        ),
    );
    let bind = bundled_review("01-bind.json");
    let refused = server.validate("guard", &bind)["response"].clone();
    assert_eq!(refused["allowed"], false, "{refused}");
    assert!(refused["status"]["message"].is_string(), "{refused}");

    for id in ["guard-monitor", "defer-monitor"] {
        let monitored = server.validate(id, &bind)["response"].clone();
        assert_eq!(monitored["allowed"], true, "{id}: {monitored}");
        for absent in ["patch", "patchType", "status"] {
            assert!(
                monitored.get(absent).is_none(),
                "{id}: {absent}: {monitored}"
            );
        }
    }
    // What the policy would have decided is logged.
    let line = server.line_with("policy=guard-monitor");
    assert!(
        line.contains("allowed=true patch_ops=0")
            && line.contains("monitor: the policy answered allowed=false"),
        "{line}"
    );
    let held = server.line_with("policy=defer-monitor");
    assert!(
        held.contains("monitor: the policy answered allowed=true patch_ops=")
            && !held.contains("monitor: the policy answered allowed=true patch_ops=0 "),
        "{held}"
    );
}

#[test]
fn a_policy_not_allowed_to_mutate_is_refused_when_its_module_mutates() {
    let tls = tls_or_skip!();
    let defer = json!({"mode": "defer"});
    let server = start(
        tls,
        "not-mutating",
        &format!(
            "validating:\n{}unsaid:\n{}",
            policy(defer.clone(), "  allowedToMutate: false\n"),
            // policy-server reads an absent allowedToMutate as false
            policy(defer, ""),
        ),
    );
    let bind = bundled_review("01-bind.json");
    for id in ["validating", "unsaid"] {
        let refused = server.validate(id, &bind)["response"].clone();
        assert_eq!(refused["allowed"], false, "{refused}");
        assert_eq!(
            refused["status"]["message"],
            format!(
                "Request rejected by policy {id}. The policy attempted to mutate the request, \
                 but it is currently configured to not allow mutations."
            )
        );
        assert!(refused.get("patch").is_none() && refused.get("patchType").is_none());
    }
    // An answer without a change goes through as it is.
    let scale = server.validate("validating", &bundled_review("05-scale.json"));
    assert_eq!(scale["response"]["allowed"], true, "{scale}");
}

#[test]
fn a_custom_message_replaces_a_refusals_and_keeps_the_policys_as_a_cause() {
    let tls = tls_or_skip!();
    let reject = json!({"mode": "reject"});
    let server = start(
        tls,
        "message",
        &format!(
            "guard:\n{}",
            policy(reject.clone(), "  message: ask the platform team\n")
        ),
    );
    let bind = bundled_review("01-bind.json");
    let refused = server.validate("guard", &bind)["response"].clone();
    let own = policy_under_test()
        .run(&reject, &request_of(&bind))
        .expect("the in-process evaluation");
    assert_eq!(refused["allowed"], false);
    assert_eq!(refused["status"]["message"], "ask the platform team");
    assert_eq!(
        refused["status"]["details"]["causes"],
        json!([{"reason": null, "message": own.message, "field": null}])
    );
}

#[test]
fn settings_the_module_refuses_stop_the_server_naming_the_policy() {
    let tls = tls_or_skip!();
    let refused = Server::start(
        tls,
        "refused-settings",
        &format!(
            "restage-gate:\n{}later:\n{}",
            policy(json!({"mode": "defer"}), ""),
            policy(json!({"mode": "later"}), ""),
        ),
    )
    .err()
    .expect("the server does not start");
    assert_eq!(refused.status.code(), Some(1), "{}", refused.stderr);
    assert!(!refused.ready_file_written);
    assert!(
        refused.stderr.contains(
            r#"policy "later": settings {"mode":"later"}: Policy settings are invalid: settings.mode: "later" is not a mode"#
        ),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_module_from_a_registry_stops_the_server_saying_what_to_do() {
    let tls = tls_or_skip!();
    let module = "registry://ghcr.io/restage-gate/policies/restage-gate:v0.1.0";
    let refused = Server::start(
        tls,
        "registry-module",
        &format!("restage-gate:\n  module: {module}\n"),
    )
    .err()
    .expect("the server does not start");
    assert_eq!(refused.status.code(), Some(1), "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains(&format!("policy \"restage-gate\": module: {module:?}"))
            && refused.stderr.contains("file:// URL"),
        "{}",
        refused.stderr
    );
}

#[test]
fn an_unknown_policy_id_is_answered_404() {
    let tls = tls_or_skip!();
    let server = start(
        tls,
        "unknown",
        &format!("restage-gate:\n{}", policy(json!({}), "")),
    );
    let (status, body) = server.post("/validate/no-such-policy", &bundled_review("01-bind.json"));
    assert_eq!(status, 404);
    assert_eq!(
        serde_json::from_slice::<Value>(&body).expect("JSON"),
        json!({"message": "unknown policy: no-such-policy", "status": 404})
    );
}

#[test]
fn bodies_that_are_not_admission_reviews_are_answered_as_policy_server_answers_them() {
    let tls = tls_or_skip!();
    let server = start(
        tls,
        "malformed",
        &format!("restage-gate:\n{}", policy(json!({}), "")),
    );
    let validate = "/validate/restage-gate";
    let status = |answer: (u16, Vec<u8>)| answer.0;
    assert_eq!(status(server.post(validate, b"{\"request\": ")), 400);
    assert_eq!(status(server.post(validate, b"not JSON")), 400);
    assert_eq!(status(server.post(validate, b"{}")), 422);
    let bind = bundled_review("01-bind.json");
    assert_eq!(status(server.request("POST", validate, None, &bind)), 415);
    assert_eq!(status(server.request("GET", validate, None, b"")), 405);
    assert_eq!(status(server.request("GET", "/readiness", None, b"")), 200);
    assert_eq!(status(server.request("GET", "/elsewhere", None, b"")), 404);
    // and the server still answers
    let scale = server.validate("restage-gate", &bundled_review("05-scale.json"));
    assert_eq!(scale["response"]["allowed"], true, "{scale}");
}
