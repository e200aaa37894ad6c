//! Pushing and pulling the policy as an OCI artifact, the way `kwctl push` / `kwctl pull` do:
//! an OCI image manifest (`application/vnd.oci.image.manifest.v1+json`) with one layer
//! `application/vnd.wasm.content.layer.v1+wasm`, config `{}` as
//! `application/vnd.wasm.config.v1+json`, the metadata's single-line annotations on the manifest.

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use oci_client::client::{
    Certificate, CertificateEncoding, ClientConfig, ClientProtocol, Config, ImageLayer,
};
use oci_client::manifest::{
    OciImageManifest, OCI_IMAGE_MEDIA_TYPE, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE,
};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use serde::Deserialize;

use crate::metadata;

/// How registries are reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// HTTPS, and plain HTTP for loopback registries (127.0.0.0/8, `localhost`, `[::1]`).
    HttpsExceptLoopback,
    /// Plain HTTP anywhere (`--allow-http`).
    AllowHttp,
    /// As kwctl reads a sources file (`--sources-path`): HTTPS, trusting also the certificate
    /// authorities the file lists for the registry, and plain HTTP only for the registries it
    /// lists as insecure, loopback ones included.
    Sources(Sources),
}

/// A kwctl sources file: `insecure_sources: ["host:port", …]` and
/// `source_authorities: {"host:port": [{type: Path, path: ca.pem} | {type: Data, data: PEM}]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(default)]
pub struct Sources {
    pub insecure_sources: BTreeSet<String>,
    pub source_authorities: BTreeMap<String, Vec<Authority>>,
}

/// A certificate authority for one registry, given inline or by file, as kwctl takes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type")]
pub enum Authority {
    Data { data: String },
    Path { path: PathBuf },
}

impl Sources {
    /// Reads a sources file; an empty one lists nothing, as for kwctl.
    pub fn read(path: &Path) -> Result<Sources, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if text.trim().is_empty() {
            return Ok(Sources::default());
        }
        serde_yaml::from_str(&text).map_err(|e| {
            format!(
                "{}: not a kwctl sources file ({e}): write `insecure_sources: [\"host:port\"]` and/or `source_authorities: {{\"host:port\": [{{type: Path, path: ca.pem}}]}}`",
                path.display()
            )
        })
    }

    /// The PEM certificates listed for `registry` (`host:port`, as in the file).
    fn authorities(&self, registry: &str) -> Result<Vec<Vec<u8>>, String> {
        self.source_authorities
            .get(registry)
            .into_iter()
            .flatten()
            .map(|authority| match authority {
                Authority::Data { data } => Ok(data.clone().into_bytes()),
                Authority::Path { path } => std::fs::read(path).map_err(|e| {
                    format!(
                        "{}, a certificate authority for {registry} in the sources file: {e}",
                        path.display()
                    )
                }),
            })
            .collect()
    }
}

/// What a pull brought back.
#[derive(Debug, Clone)]
pub struct Pulled {
    pub module: Vec<u8>,
    pub manifest: OciImageManifest,
    /// `sha256:…` of the manifest.
    pub digest: String,
    pub config: Vec<u8>,
    pub config_media_type: String,
}

pub(crate) fn parse(reference: &str) -> Result<Reference, String> {
    Reference::from_str(reference.trim_start_matches("registry://"))
        .map_err(|e| format!("{reference} is not an OCI reference: {e}"))
}

/// Whether `registry` (`host[:port]`) is a loopback one: 127.0.0.0/8, `localhost` or `[::1]`.
pub fn is_loopback(registry: &str) -> bool {
    let host = registry.rsplit_once(':').map_or(registry, |(h, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            registry
        }
    });
    host == "localhost"
        || host == "[::1]"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// How to reach `reference`'s registry: HTTPS unless [`Transport`] allows plain HTTP there,
/// and the certificate authorities to trust besides the built-in ones (PEM).
pub(crate) struct Connection {
    pub protocol: ClientProtocol,
    pub authorities: Vec<Vec<u8>>,
}

pub(crate) fn connection(
    reference: &Reference,
    transport: &Transport,
) -> Result<Connection, String> {
    let registry = reference.resolve_registry().to_string();
    let https_except = |plain: bool| {
        if plain {
            ClientProtocol::HttpsExcept(vec![registry.clone()])
        } else {
            ClientProtocol::Https
        }
    };
    Ok(match transport {
        Transport::AllowHttp => Connection {
            protocol: ClientProtocol::Http,
            authorities: Vec::new(),
        },
        Transport::HttpsExceptLoopback => Connection {
            protocol: https_except(is_loopback(&registry)),
            authorities: Vec::new(),
        },
        Transport::Sources(sources) => Connection {
            protocol: https_except(sources.insecure_sources.contains(&registry)),
            authorities: sources.authorities(&registry)?,
        },
    })
}

pub(crate) fn client(reference: &Reference, transport: &Transport) -> Result<Client, String> {
    let connection = connection(reference, transport)?;
    Ok(Client::new(ClientConfig {
        protocol: connection.protocol,
        extra_root_certificates: connection
            .authorities
            .into_iter()
            .map(|data| Certificate {
                encoding: CertificateEncoding::Pem,
                data,
            })
            .collect(),
        ..Default::default()
    }))
}

/// An error with the errors that caused it, which name what actually failed (a refused
/// connection, a TLS alert, an HTTP status), and what to do about a plain-HTTP registry.
pub(crate) fn explain(registry: &str, error: &(dyn Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let text = e.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        cause = e.source();
    }
    // rustls's words for a server that answered a TLS handshake in plain HTTP.
    if message.contains("InvalidContentType") {
        message.push_str(&format!(
            " ({registry} speaks plain HTTP, not TLS: list it under insecure_sources in a kwctl sources file and pass that file, `--sources-path FILE` or `make … KWCTL_SOURCES=FILE`)"
        ));
    }
    message
}

/// Basic auth from `REGISTRY_USERNAME` / `REGISTRY_PASSWORD`, anonymous otherwise.
pub(crate) fn auth() -> RegistryAuth {
    match (
        std::env::var("REGISTRY_USERNAME"),
        std::env::var("REGISTRY_PASSWORD"),
    ) {
        (Ok(user), Ok(password)) if !user.is_empty() => RegistryAuth::Basic(user, password),
        _ => RegistryAuth::Anonymous,
    }
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))
}

/// Pushes an annotated module; the immutable reference `registry/repository@sha256:…`.
pub fn push(module: &[u8], reference: &str, transport: &Transport) -> Result<String, String> {
    let meta = metadata::embedded(module)?.ok_or(
        "the module is not annotated (no io.kubewarden.metadata section): push annotated-policy.wasm, built by `make annotated-policy.wasm`",
    )?;
    let image = parse(reference)?;
    let registry = image.resolve_registry().to_string();
    let annotations: BTreeMap<String, String> = metadata::manifest_annotations(&meta)
        .into_iter()
        .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
        .collect();
    let layers = vec![ImageLayer::new(
        module.to_vec(),
        WASM_LAYER_MEDIA_TYPE.to_string(),
        None,
    )];
    let config = Config::new(b"{}".to_vec(), WASM_CONFIG_MEDIA_TYPE.to_string(), None);
    let mut manifest = OciImageManifest::build(&layers, &config, Some(annotations));
    // The image spec asks for it, and kwctl's manifests carry it.
    manifest.media_type = Some(OCI_IMAGE_MEDIA_TYPE.to_string());
    let client = client(&image, transport)?;
    let auth = auth();
    runtime()?.block_on(async {
        client
            .push(&image, &layers, config, &auth, Some(manifest))
            .await
            .map_err(|e| {
                format!(
                    "push to registry {registry} failed: {}",
                    explain(&registry, &e)
                )
            })?;
        let (_, digest) = client
            .pull_image_manifest(&image, &auth)
            .await
            .map_err(|e| {
                format!(
                    "registry {registry} took the push but reading its manifest back failed: {}",
                    explain(&registry, &e)
                )
            })?;
        Ok(format!("{registry}/{}@{digest}", image.repository()))
    })
}

/// Pulls a module by tag or digest.
pub fn pull(reference: &str, transport: &Transport) -> Result<Pulled, String> {
    let image = parse(reference)?;
    let registry = image.resolve_registry().to_string();
    let client = client(&image, transport)?;
    let auth = auth();
    runtime()?.block_on(async {
        let data = client
            .pull(&image, &auth, vec![WASM_LAYER_MEDIA_TYPE])
            .await
            .map_err(|e| {
                format!(
                    "pull of {reference} from registry {registry} failed: {}",
                    explain(&registry, &e)
                )
            })?;
        let (manifest, digest) = client
            .pull_image_manifest(&image, &auth)
            .await
            .map_err(|e| {
                format!(
                    "reading the manifest of {reference} from registry {registry} failed: {}",
                    explain(&registry, &e)
                )
            })?;
        let layer = data
            .layers
            .into_iter()
            .next()
            .ok_or(format!("{reference} has no layer"))?;
        Ok(Pulled {
            module: layer.data.to_vec(),
            manifest,
            digest,
            config: data.config.data.to_vec(),
            config_media_type: data.config.media_type,
        })
    })
}

/// Writes `bytes` to `path` only when complete: a failure leaves no partial file behind.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let partial = path.with_extension("partial");
    std::fs::write(&partial, bytes)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            format!("{}: {e}", path.display())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_registries_get_plain_http_by_default() {
        for (registry, loopback) in [
            ("127.0.0.1:5000", true),
            ("localhost:5000", true),
            ("[::1]:5000", true),
            ("ghcr.io", false),
            ("registry.example.com:5000", false),
            ("127.example.com", false),
        ] {
            assert_eq!(is_loopback(registry), loopback, "{registry}");
        }
    }

    fn sources(yaml: &str) -> Result<Sources, String> {
        let path = std::env::temp_dir().join(format!(
            "restage-gate-sources-{}-{}.yml",
            std::process::id(),
            yaml.len()
        ));
        std::fs::write(&path, yaml).expect("writable");
        let read = Sources::read(&path);
        let _ = std::fs::remove_file(&path);
        read
    }

    fn protocol(registry: &str, transport: &Transport) -> ClientProtocol {
        let reference = parse(&format!("{registry}/policies/restage-gate:v1")).expect("reference");
        connection(&reference, transport)
            .expect("connection")
            .protocol
    }

    #[test]
    fn a_sources_file_makes_only_its_insecure_sources_plain_http_loopback_or_not() {
        let listed = sources(
            "insecure_sources: [\"127.0.0.1:5000\", \"registry.lan:80\"]\nsource_authorities: {}\n",
        )
        .expect("kwctl's format");
        let transport = Transport::Sources(listed);
        for (registry, plain) in [
            ("127.0.0.1:5000", true),
            ("registry.lan:80", true),
            ("127.0.0.1:5001", false),
            ("localhost:5000", false),
            ("ghcr.io", false),
        ] {
            let want = if plain {
                ClientProtocol::HttpsExcept(vec![registry.to_string()])
            } else {
                ClientProtocol::Https
            };
            assert_eq!(protocol(registry, &transport), want, "{registry}");
        }
        let nothing = Transport::Sources(sources("").expect("an empty file lists nothing"));
        assert_eq!(protocol("127.0.0.1:5000", &nothing), ClientProtocol::Https);
        assert_eq!(
            protocol("127.0.0.1:5000", &Transport::HttpsExceptLoopback),
            ClientProtocol::HttpsExcept(vec!["127.0.0.1:5000".to_string()])
        );
    }

    #[test]
    fn a_sources_file_gives_the_registrys_certificate_authorities_inline_or_by_path() {
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        let file = std::env::temp_dir().join(format!("restage-gate-ca-{}.pem", std::process::id()));
        std::fs::write(&file, pem).expect("writable");
        let listed = sources(&format!(
            "source_authorities:\n  \"registry.lan:5000\":\n    - type: Data\n      data: |\n        inline\n    - type: Path\n      path: {}\n  \"other.lan\":\n    - type: Path\n      path: /nonexistent/ca.pem\n",
            file.display()
        ))
        .expect("kwctl's format");
        let both = listed.authorities("registry.lan:5000");
        let _ = std::fs::remove_file(&file);
        assert_eq!(
            both,
            Ok(vec![b"inline\n".to_vec(), pem.as_bytes().to_vec()])
        );
        assert_eq!(listed.authorities("ghcr.io"), Ok(vec![]));
        let err = listed.authorities("other.lan").expect_err("missing file");
        assert!(
            err.starts_with("/nonexistent/ca.pem, a certificate authority for other.lan"),
            "{err}"
        );
        let err = sources("insecure_sources: 127.0.0.1:5000\n").expect_err("not a list");
        assert!(err.contains("not a kwctl sources file"), "{err}");
    }

    #[derive(Debug)]
    struct Failure(&'static str, Option<Box<Failure>>);

    impl std::fmt::Display for Failure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Failure {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|e| e as &(dyn Error + 'static))
        }
    }

    #[test]
    fn failures_name_their_causes_and_a_plain_http_registry_says_what_to_do() {
        let tls = Failure(
            "error sending request for url (https://127.0.0.1:5000/v2/)",
            Some(Box::new(Failure(
                "client error (Connect)",
                Some(Box::new(Failure(
                    "received corrupt message of type InvalidContentType",
                    None,
                ))),
            ))),
        );
        let message = explain("127.0.0.1:5000", &tls);
        assert!(
            message.starts_with("error sending request for url (https://127.0.0.1:5000/v2/): client error (Connect): received corrupt message of type InvalidContentType (127.0.0.1:5000 speaks plain HTTP"),
            "{message}"
        );
        assert!(message.contains("insecure_sources") && message.contains("KWCTL_SOURCES"));
        let refused = Failure("connection refused", None);
        assert_eq!(explain("127.0.0.1:5000", &refused), "connection refused");
    }
}
