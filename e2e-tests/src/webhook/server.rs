//! The HTTPS side of the webhook: the routes policy-server serves to the API server
//! (`crates/policy-server/src/lib.rs`, its router, and `crates/policy-server/src/api/handlers.rs`)
//! over rustls, and the errors it answers for requests it cannot evaluate.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use restage_gate_evaluation::evaluator::AdmissionRequest;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use crate::policies::Policy;
use crate::review;

/// The largest body read, as policy-server's JSON extractor reads no more (axum's default
/// body limit): the API server's reviews are far smaller.
const BODY_LIMIT: usize = 2 * 1024 * 1024;

pub struct Config {
    pub listen: SocketAddr,
    pub cert: PathBuf,
    pub key: PathBuf,
    pub ready_file: Option<PathBuf>,
}

struct State {
    policies: BTreeMap<String, Arc<Policy>>,
    /// Evaluations run at once, at most one per CPU, as policy-server's worker pool allows.
    evaluations: Semaphore,
}

/// Serves `policies` until the process is stopped; returns only when it cannot start.
pub fn serve(policies: BTreeMap<String, Arc<Policy>>, config: Config) -> Result<(), String> {
    let tls = TlsAcceptor::from(Arc::new(tls_config(&config.cert, &config.key)?));
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let state = Arc::new(State {
        policies,
        evaluations: Semaphore::new(workers),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(accept_loop(state, tls, config))
}

async fn accept_loop(state: Arc<State>, tls: TlsAcceptor, config: Config) -> Result<(), String> {
    let listener = TcpListener::bind(config.listen)
        .await
        .map_err(|e| format!("--listen {}: {e}", config.listen))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("--listen {}: {e}", config.listen))?;
    if let Some(path) = &config.ready_file {
        write_ready_file(path, bound)?;
    }
    let ids: Vec<String> = state
        .policies
        .values()
        .map(|p| format!("{} ({})", p.id, p.mode.name()))
        .collect();
    eprintln!(
        "restage-gate-webhook: serving https://{bound}/validate/<policy-id> for {}",
        ids.join(", ")
    );
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait a little rather than spin.
                eprintln!("restage-gate-webhook: accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let tls = tls.clone();
        let state = state.clone();
        tokio::spawn(async move {
            let stream = match tls.accept(stream).await {
                Ok(stream) => stream,
                Err(e) => {
                    eprintln!("restage-gate-webhook: TLS with {peer}: {e}");
                    return;
                }
            };
            let service = hyper::service::service_fn(move |request| {
                let state = state.clone();
                async move { Ok::<_, Infallible>(route(state, request).await) }
            });
            // The timer lets hyper close connections whose headers never finish arriving.
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                eprintln!("restage-gate-webhook: connection from {peer}: {e}");
            }
        });
    }
}

/// The bound address, written whole or not at all (renamed into place), so that whoever waits
/// for the file reads the port of a server that is listening.
fn write_ready_file(path: &Path, bound: SocketAddr) -> Result<(), String> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, format!("{bound}\n"))
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| format!("--ready-file {}: {e}", path.display()))
}

/// The certificate chain and key, served over TLS 1.2 and 1.3 with the aws-lc-rs provider. Only
/// HTTP/1.1 is offered: the API server's webhook client speaks it as well as HTTP/2.
fn tls_config(cert: &Path, key: &Path) -> Result<rustls::ServerConfig, String> {
    let chain = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("--cert {}: {e}", cert.display()))?;
    if chain.is_empty() {
        return Err(format!("--cert {}: no certificate in it", cert.display()));
    }
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("--key {}: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_single_cert(chain, key_der)
        .map_err(|e| format!("--cert {} and --key {}: {e}", cert.display(), key.display()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

type Answer = Response<Full<Bytes>>;

/// policy-server's routes: `POST /validate/{policy_id}` and, on its readiness port, `GET
/// /readiness`; here both on the one listener. Other paths are 404 and other methods 405, with
/// empty bodies, as its router answers.
async fn route(state: Arc<State>, request: Request<Incoming>) -> Answer {
    let path = request.uri().path().to_owned();
    if path == "/readiness" {
        return match *request.method() {
            Method::GET => empty(StatusCode::OK),
            _ => empty(StatusCode::METHOD_NOT_ALLOWED),
        };
    }
    match path.strip_prefix("/validate/") {
        Some(id) if !id.is_empty() && !id.contains('/') => match *request.method() {
            Method::POST => validate(state, id.to_string(), request).await,
            _ => empty(StatusCode::METHOD_NOT_ALLOWED),
        },
        _ => empty(StatusCode::NOT_FOUND),
    }
}

/// policy-server's `validate_handler`: the body is read as an AdmissionReview first (an error is
/// answered as its JSON extractor answers it: 415 without a JSON content type, 413 when too
/// large, 400 when not JSON, 422 when JSON but not an AdmissionReview), then the policy is
/// looked up (404 when unknown) and evaluated.
async fn validate(state: Arc<State>, id: String, request: Request<Incoming>) -> Answer {
    // Requests that are not evaluated get their log line too, with what they were answered.
    let refuse = |status: StatusCode, message: &str| {
        eprintln!(
            "restage-gate-webhook: policy={id} status={} message={message:?}",
            status.as_u16()
        );
        api_error(status, message)
    };
    if !is_json(request.headers().get(CONTENT_TYPE)) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Expected request with `Content-Type: application/json`",
        );
    }
    let body = match Limited::new(request.into_body(), BODY_LIMIT)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Failed to buffer the request body: length limit exceeded",
            )
        }
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                &format!("Failed to buffer the request body: {e}"),
            )
        }
    };
    let admission_request = match read_review(&body) {
        Ok(request) => request,
        Err((status, message)) => return refuse(status, &message),
    };
    let Some(policy) = state.policies.get(&id).cloned() else {
        return refuse(StatusCode::NOT_FOUND, &format!("unknown policy: {id}"));
    };
    let Ok(_permit) = state.evaluations.acquire().await else {
        return something_went_wrong("the evaluation pool is closed");
    };
    // The module runs synchronously and may take a while: off the async workers, as
    // policy-server runs it.
    let evaluated = tokio::task::spawn_blocking(move || {
        let evaluation = review::evaluate(&policy, &admission_request)?;
        eprintln!(
            "restage-gate-webhook: {}",
            review::log_line(&policy, &admission_request, &evaluation)
        );
        Ok::<_, String>(evaluation.response)
    })
    .await;
    match evaluated {
        Ok(Ok(response)) => json_answer(StatusCode::OK, &response.review()),
        Ok(Err(e)) => something_went_wrong(&format!("policy {id}: {e}")),
        Err(e) => something_went_wrong(&format!("policy {id}: the evaluation failed: {e}")),
    }
}

/// The `request` of an AdmissionReview body, or the HTTP status and message for a body that is
/// not one.
fn read_review(body: &[u8]) -> Result<AdmissionRequest, (StatusCode, String)> {
    let document: Value = serde_json::from_slice(body).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("Failed to parse the request body as JSON: {e}"),
        )
    })?;
    let unprocessable = |message: String| {
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Failed to deserialize the JSON body into the target type: {message}"),
        )
    };
    let Some(request) = document.get("request") else {
        return Err(unprocessable("missing field `request`".into()));
    };
    AdmissionRequest::from_value(request).map_err(unprocessable)
}

/// `application/json`, or any `+json` type, parameters aside.
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    let Some(value) = content_type.and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// An error the evaluation hit that is not the policy's answer: logged, and answered as
/// policy-server answers it, without the details.
fn something_went_wrong(error: &str) -> Answer {
    eprintln!("restage-gate-webhook: evaluation error: {error}");
    api_error(StatusCode::INTERNAL_SERVER_ERROR, "Something went wrong")
}

/// policy-server's error body: `{"message", "status"}`.
fn api_error(status: StatusCode, message: &str) -> Answer {
    json_answer(
        status,
        &json!({"message": message, "status": status.as_u16()}),
    )
}

fn json_answer(status: StatusCode, body: &Value) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::from(body.to_string())));
    *answer.status_mut() = status;
    answer
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    answer
}

fn empty(status: StatusCode) -> Answer {
    let mut answer = Response::new(Full::new(Bytes::new()));
    *answer.status_mut() = status;
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_that_is_not_json_is_a_bad_request_and_json_of_another_shape_unprocessable() {
        assert_eq!(
            read_review(b"{not json").unwrap_err().0,
            StatusCode::BAD_REQUEST
        );
        assert_eq!(read_review(b"").unwrap_err().0, StatusCode::BAD_REQUEST);
        let (status, message) = read_review(b"{}").unwrap_err();
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(message.contains("`request`"), "{message}");
        let (status, _) = read_review(br#"{"request": {"uid": "u1"}}"#).unwrap_err();
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    }

    #[test]
    fn json_content_types_are_recognised() {
        let json = |v: &'static str| is_json(Some(&HeaderValue::from_static(v)));
        assert!(json("application/json"));
        assert!(json("application/json; charset=utf-8"));
        assert!(json("application/merge-patch+json"));
        assert!(!json("text/plain"));
        assert!(!is_json(None));
    }
}
