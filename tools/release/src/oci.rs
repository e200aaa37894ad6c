//! Pushing and pulling the policy as an OCI artifact, the way `kwctl push` / `kwctl pull` do:
//! one layer `application/vnd.wasm.content.layer.v1+wasm`, config `{}` as
//! `application/vnd.wasm.config.v1+json`, the metadata's single-line annotations on the manifest.

use std::collections::BTreeMap;
use std::path::Path;
use std::str::FromStr;

use oci_client::client::{ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::manifest::{OciImageManifest, WASM_CONFIG_MEDIA_TYPE, WASM_LAYER_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};

use crate::metadata;

/// Plain HTTP is used for loopback registries, or anywhere when explicitly allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    HttpsExceptLoopback,
    AllowHttp,
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

fn is_loopback(registry: &str) -> bool {
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

/// The protocol for `reference`'s registry: HTTPS unless [`Transport`] allows plain HTTP.
pub(crate) fn protocol(reference: &Reference, transport: Transport) -> ClientProtocol {
    let registry = reference.resolve_registry().to_string();
    match transport {
        Transport::AllowHttp => ClientProtocol::Http,
        Transport::HttpsExceptLoopback if is_loopback(&registry) => {
            ClientProtocol::HttpsExcept(vec![registry])
        }
        Transport::HttpsExceptLoopback => ClientProtocol::Https,
    }
}

pub(crate) fn client(reference: &Reference, transport: Transport) -> Client {
    Client::new(ClientConfig {
        protocol: protocol(reference, transport),
        ..Default::default()
    })
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
pub fn push(module: &[u8], reference: &str, transport: Transport) -> Result<String, String> {
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
    let manifest = OciImageManifest::build(&layers, &config, Some(annotations));
    let client = client(&image, transport);
    let auth = auth();
    runtime()?.block_on(async {
        client
            .push(&image, &layers, config, &auth, Some(manifest))
            .await
            .map_err(|e| format!("push to registry {registry} failed: {e}"))?;
        let (_, digest) = client
            .pull_image_manifest(&image, &auth)
            .await
            .map_err(|e| {
                format!(
                    "registry {registry} took the push but reading its manifest back failed: {e}"
                )
            })?;
        Ok(format!("{registry}/{}@{digest}", image.repository()))
    })
}

/// Pulls a module by tag or digest.
pub fn pull(reference: &str, transport: Transport) -> Result<Pulled, String> {
    let image = parse(reference)?;
    let registry = image.resolve_registry().to_string();
    let client = client(&image, transport);
    let auth = auth();
    runtime()?.block_on(async {
        let data = client
            .pull(&image, &auth, vec![WASM_LAYER_MEDIA_TYPE])
            .await
            .map_err(|e| format!("pull of {reference} from registry {registry} failed: {e}"))?;
        let (manifest, digest) = client
            .pull_image_manifest(&image, &auth)
            .await
            .map_err(|e| {
                format!("reading the manifest of {reference} from registry {registry} failed: {e}")
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
}
