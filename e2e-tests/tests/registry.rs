//! The release path against a real registry on 127.0.0.1 (Debian's `docker-registry`):
//! annotate, push, pull by tag and by digest, evaluate the pulled module, sign and verify it,
//! log in. Skipped, visibly, when `docker-registry` is not installed (`.ci/run` installs it).
//! `make push` and `make pull` through kwctl: `kwctl_stand_in.rs`.

use std::process::{Command, Output};

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::{OciImageManifest, OCI_IMAGE_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference};
use restage_gate_e2e::bundled;
use restage_gate_e2e::host::{policy_path, policy_under_test, Module};
use restage_gate_e2e::registry::{Registry, HTPASSWD_BIN, REGISTRY_BIN};
use restage_gate_evaluation::admission::{read_request_file, Outcome};
use restage_gate_evaluation::guest::Guest;
use restage_gate_release::metadata;
use restage_gate_release::oci::{self, Transport};
use restage_gate_release::repository;
use restage_gate_release::signing;
use serde_json::{json, Value};
use sigstore::cosign::CosignCapabilities;

fn annotated_module() -> (Vec<u8>, Value) {
    let module = std::fs::read(policy_path()).expect("policy.wasm (make policy.wasm)");
    let protocol = policy_under_test()
        .protocol_version()
        .expect("protocol_version");
    let meta = metadata::read_yaml(
        &std::fs::read_to_string(repository::root().join("metadata.yml")).expect("metadata.yml"),
    )
    .expect("YAML");
    let readme = std::fs::read_to_string(repository::root().join("README.md")).expect("README.md");
    let meta = metadata::annotated(&meta, protocol.as_str().expect("a string"), &readme)
        .expect("valid metadata");
    (metadata::embed(&module, &meta).expect("embed"), meta)
}

/// The decision, patch paths, warnings and audit of each bundled request (the clock reading
/// in `held-since` aside).
fn decisions(module: &Module) -> Vec<(String, Vec<String>, usize, Value)> {
    bundled::bundled_request_paths()
        .iter()
        .map(|path| {
            let request = read_request_file(path).expect("request");
            let response = module
                .validate(&json!({"settings": {}, "request": request}))
                .expect("validate");
            let o = Outcome::new(&request, &response);
            let paths = o
                .patch
                .iter()
                .map(|op| format!("{} {}", op["op"], op["path"]))
                .collect();
            (
                o.decision().to_string(),
                paths,
                o.warnings.len(),
                json!(o.audit),
            )
        })
        .collect()
}

#[test]
fn the_annotated_module_evaluates_like_the_plain_one() {
    let (annotated, meta) = annotated_module();
    assert_eq!(metadata::embedded(&annotated).expect("parse"), Some(meta));
    let annotated = Module::from_bytes(&annotated).expect("compiles");
    assert_eq!(decisions(&annotated), decisions(policy_under_test()));
}

#[test]
fn push_and_pull_round_trip_through_a_real_registry() {
    let Some(mut registry) = Registry::start() else {
        println!("SKIPPED push/pull round trip: `{REGISTRY_BIN}` is not installed (apt-get install docker-registry)");
        return;
    };
    let (annotated, meta) = annotated_module();
    let version = meta["annotations"][metadata::VERSION]
        .as_str()
        .expect("version");
    let tagged = format!("{}/policies/restage-gate:v{version}", registry.addr);

    let plain = std::fs::read(policy_path()).unwrap_or_default();
    let refused = oci::push(&plain, &tagged, &Transport::HttpsExceptLoopback)
        .expect_err("unannotated refused");
    assert!(refused.contains("not annotated"), "{refused}");

    let pushed = oci::push(&annotated, &tagged, &Transport::HttpsExceptLoopback).expect("push");
    let (repository, digest) = pushed.split_once('@').expect("an immutable reference");
    assert_eq!(
        repository,
        format!("{}/policies/restage-gate", registry.addr)
    );
    assert!(
        digest.starts_with("sha256:") && digest.len() == 71,
        "{pushed}"
    );

    let by_tag = oci::pull(&tagged, &Transport::HttpsExceptLoopback).expect("pull by tag");
    let by_digest = oci::pull(&pushed, &Transport::HttpsExceptLoopback).expect("pull by digest");
    for pulled in [&by_tag, &by_digest] {
        assert!(
            pulled.module == annotated,
            "the module comes back byte for byte"
        );
        assert_eq!(pulled.digest, digest);
        assert_eq!(pulled.manifest.layers.len(), 1);
        assert_eq!(
            pulled.manifest.layers[0].media_type,
            "application/vnd.wasm.content.layer.v1+wasm"
        );
        assert_eq!(
            pulled.manifest.config.media_type,
            "application/vnd.wasm.config.v1+json"
        );
        assert_eq!(
            pulled.config_media_type,
            "application/vnd.wasm.config.v1+json"
        );
        assert_eq!(pulled.config, b"{}");
        let annotations = pulled
            .manifest
            .annotations
            .clone()
            .expect("manifest annotations");
        let want: std::collections::BTreeMap<String, String> =
            metadata::manifest_annotations(&meta)
                .into_iter()
                .map(|(k, v)| (k, v.as_str().expect("string").to_string()))
                .collect();
        assert_eq!(annotations, want);
        assert_eq!(
            annotations["org.opencontainers.image.source"],
            meta["annotations"][metadata::SOURCE]
        );
        assert!(
            !annotations.contains_key(metadata::USAGE),
            "multi-line usage is not a manifest annotation"
        );
    }
    // The image spec's mediaType, which kwctl's manifests carry, in the bytes the registry keeps.
    assert_eq!(stored_manifest(&pushed)["mediaType"], OCI_IMAGE_MEDIA_TYPE);
    assert_eq!(
        by_digest.manifest.media_type.as_deref(),
        Some(OCI_IMAGE_MEDIA_TYPE)
    );
    let pulled = Module::from_bytes(&by_digest.module).expect("the pulled module compiles");
    assert_eq!(decisions(&pulled), decisions(policy_under_test()));

    registry.stop();
    let out = registry.dir.join("pulled.wasm");
    let err = oci::push(&annotated, &tagged, &Transport::HttpsExceptLoopback)
        .expect_err("registry stopped");
    assert!(
        err.starts_with(&format!("push to registry {} failed", registry.addr)),
        "{err}"
    );
    let err = oci::pull(&tagged, &Transport::HttpsExceptLoopback)
        .and_then(|p| oci::write_atomically(&out, &p.module))
        .expect_err("registry stopped");
    assert!(err.contains(&registry.addr), "{err}");
    assert!(
        !out.exists() && !out.with_extension("partial").exists(),
        "nothing half-written"
    );
}

/// Throwaway key pairs only: no private key is ever committed.
const PASSWORD: &[u8] = b"throwaway test password";

/// Runs `f` with a plain OCI client on the test registry, as any registry user would.
fn with_plain_client<T>(f: impl AsyncFnOnce(&Client) -> T) -> T {
    let client = Client::new(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    });
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f(&client))
}

/// A signature artifact as any OCI client reads it: its manifest and first layer's bytes.
fn signature_artifact(reference: &str) -> (OciImageManifest, Vec<u8>) {
    let reference: Reference = reference.parse().expect("reference");
    with_plain_client(async |client| {
        let (manifest, _) = client
            .pull_image_manifest(&reference, &RegistryAuth::Anonymous)
            .await
            .expect("signature manifest");
        let mut payload = Vec::new();
        client
            .pull_blob(&reference, &manifest.layers[0], &mut payload)
            .await
            .expect("signature payload");
        (manifest, payload)
    })
}

/// The manifest `reference` names, as the registry keeps it.
fn stored_manifest(reference: &str) -> Value {
    let reference: Reference = reference.parse().expect("reference");
    with_plain_client(async |client| {
        let (bytes, _) = client
            .pull_manifest_raw(
                &reference,
                &RegistryAuth::Anonymous,
                &[OCI_IMAGE_MEDIA_TYPE],
            )
            .await
            .expect("manifest");
        serde_json::from_slice(&bytes).expect("a JSON manifest")
    })
}

/// Tags `from`'s manifest as `to` as well, as someone copying a signature would.
fn copy_manifest(from: &str, to: &str) {
    let (from, to): (Reference, Reference) = (from.parse().expect("from"), to.parse().expect("to"));
    with_plain_client(async |client| {
        let (bytes, _) = client
            .pull_manifest_raw(&from, &RegistryAuth::Anonymous, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .expect("manifest");
        client
            .push_manifest_raw(
                &to,
                bytes,
                OCI_IMAGE_MEDIA_TYPE.parse().expect("media type"),
            )
            .await
            .expect("copy");
    })
}

#[test]
fn signatures_are_cosigns_and_verify_as_policy_servers_verify_them() {
    let Some(registry) = Registry::start() else {
        println!("SKIPPED sign/verify round trip: `{REGISTRY_BIN}` is not installed (apt-get install docker-registry)");
        return;
    };
    let transport = &Transport::HttpsExceptLoopback;
    let (annotated, meta) = annotated_module();
    let version = meta["annotations"][metadata::VERSION]
        .as_str()
        .expect("version");
    let repository = format!("{}/policies/restage-gate", registry.addr);
    let tagged = format!("{repository}:v{version}");
    let pushed = oci::push(&annotated, &tagged, transport).expect("push");
    let digest = pushed.split_once('@').expect("by digest").1.to_string();
    let signature_tag = format!("{repository}:{}.sig", digest.replace(':', "-"));
    let release =
        signing::generate_key_pair(&registry.dir.join("release"), PASSWORD).expect("keys");
    let other = signing::generate_key_pair(&registry.dir.join("other"), PASSWORD).expect("keys");

    let err = signing::verify(&tagged, &release.public, transport).expect_err("not signed yet");
    assert!(
        err.contains("is not signed") && err.contains(&signature_tag) && err.contains("make sign"),
        "{err}"
    );

    let err =
        signing::sign(&tagged, &release.private, b"wrong", transport).expect_err("wrong password");
    assert!(err.contains("COSIGN_PASSWORD"), "{err}");

    let signed = signing::sign(&tagged, &release.private, PASSWORD, transport).expect("sign");
    assert!(!signed.already);
    assert_eq!(signed.artifact, pushed, "signed by digest");
    assert_eq!(signed.signature, signature_tag);

    // cosign's layout, read with a plain OCI client: one simple-signing layer naming the digest,
    // its signature in the layer annotation, verifiable against the payload bytes.
    let (manifest, payload) = signature_artifact(&signature_tag);
    assert_eq!(manifest.media_type.as_deref(), Some(OCI_IMAGE_MEDIA_TYPE));
    assert_eq!(manifest.layers.len(), 1);
    let layer = &manifest.layers[0];
    assert_eq!(
        layer.media_type,
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let simple: Value = serde_json::from_slice(&payload).expect("simple-signing JSON");
    assert_eq!(
        simple["critical"]["type"],
        "cosign container image signature"
    );
    assert_eq!(
        simple["critical"]["image"]["docker-manifest-digest"],
        *digest
    );
    assert_eq!(
        simple["critical"]["identity"]["docker-reference"],
        *repository
    );
    let signature = layer
        .annotations
        .as_ref()
        .and_then(|a| a.get("dev.cosignproject.cosign/signature"))
        .expect("signature annotation");
    for (keys, signed_it) in [(&release, true), (&other, false)] {
        let public = std::fs::read_to_string(&keys.public).expect("public key");
        let checked = <sigstore::cosign::Client as CosignCapabilities>::verify_blob_with_public_key(
            &public, signature, &payload,
        );
        assert_eq!(checked.is_ok(), signed_it, "{}", keys.public.display());
    }

    for reference in [
        tagged.clone(),
        pushed.clone(),
        format!("registry://{pushed}"),
    ] {
        let verified = signing::verify(&reference, &release.public, transport).expect("verifies");
        assert_eq!(verified.artifact, pushed);
        assert_eq!(verified.signatures, 1);
    }

    let err = signing::verify(&tagged, &other.public, transport).expect_err("another key");
    assert!(
        err.contains("not by the key") && err.contains(&*other.public.to_string_lossy()),
        "{err}"
    );

    // Signing again is a no-op; another key is refused rather than replacing the signature.
    assert!(
        signing::sign(&tagged, &release.private, PASSWORD, transport)
            .expect("sign again")
            .already
    );
    let err = signing::sign(&tagged, &other.private, PASSWORD, transport)
        .expect_err("would replace a signature");
    assert!(err.contains("by other keys"), "{err}");
    let verified = signing::verify(&tagged, &release.public, transport).expect("still signed");
    assert_eq!(verified.signatures, 1);

    // Re-pushed with other bytes, the tag names an unsigned digest; the signed one still verifies.
    let mut changed_meta = meta.clone();
    changed_meta["annotations"][metadata::USAGE] = json!("changed after signing");
    let changed = metadata::embed(&annotated, &changed_meta).expect("embed");
    let repushed = oci::push(&changed, &tagged, transport).expect("push again");
    assert_ne!(repushed, pushed);
    let err = signing::verify(&tagged, &release.public, transport).expect_err("new bytes");
    assert!(
        err.contains("is not signed") && err.contains("pushed again"),
        "{err}"
    );
    signing::verify(&pushed, &release.public, transport).expect("the signed digest verifies");

    // The old signature copied onto the new bytes does not vouch for them.
    let new_digest = repushed.split_once('@').expect("by digest").1;
    copy_manifest(
        &signature_tag,
        &format!("{repository}:{}.sig", new_digest.replace(':', "-")),
    );
    let err = signing::verify(&tagged, &release.public, transport).expect_err("copied signature");
    assert!(
        err.contains("no signature for this digest") && err.contains("do not install"),
        "{err}"
    );
}

const USER: &str = "releaser";
const LOGIN_PASSWORD: &str = "throwaway registry password";

/// The release tool's command line (`restage-gate-release`), with the login given, if any.
fn release_tool(args: &[&str], login: Option<(&str, &str)>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_release-tool"));
    command
        .args(args)
        .env_remove("REGISTRY_USERNAME")
        .env_remove("REGISTRY_PASSWORD");
    if let Some((user, password)) = login {
        command
            .env("REGISTRY_USERNAME", user)
            .env("REGISTRY_PASSWORD", password);
    }
    command.output().expect("the release tool runs")
}

#[test]
fn the_release_tool_logs_in_with_registry_username_and_password() {
    let Some(registry) = Registry::start_with_login(USER, LOGIN_PASSWORD) else {
        println!("SKIPPED login round trip: `{REGISTRY_BIN}` or `{HTPASSWD_BIN}` is not installed (apt-get install docker-registry apache2-utils)");
        return;
    };
    let (annotated, meta) = annotated_module();
    let module = registry.dir.join("annotated-policy.wasm");
    std::fs::write(&module, &annotated).expect("writable");
    let module = module.to_str().expect("UTF-8");
    let tagged = format!(
        "{}/policies/restage-gate:v{}",
        registry.addr,
        meta["annotations"][metadata::VERSION]
            .as_str()
            .expect("version")
    );
    let push = ["push", module, &tagged];

    for login in [None, Some((USER, "wrong"))] {
        let refused = release_tool(&push, login);
        let stderr = String::from_utf8_lossy(&refused.stderr);
        assert_eq!(refused.status.code(), Some(1), "{login:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "restage-gate-release: push to registry {} failed",
                registry.addr
            )) && stderr.contains("401"),
            "{login:?}: {stderr}"
        );
    }

    let pushed = release_tool(&push, Some((USER, LOGIN_PASSWORD)));
    let stdout = String::from_utf8_lossy(&pushed.stdout);
    assert!(
        pushed.status.success(),
        "{}",
        String::from_utf8_lossy(&pushed.stderr)
    );
    let reference = stdout.lines().last().unwrap_or_default();
    assert!(
        reference.starts_with(&format!("{}/policies/restage-gate@sha256:", registry.addr)),
        "{stdout}"
    );
    let out = registry.dir.join("pulled-policy.wasm");
    let pull = ["pull", reference, out.to_str().expect("UTF-8")];
    assert!(
        !release_tool(&pull, None).status.success(),
        "anonymous pull"
    );
    let pulled = release_tool(&pull, Some((USER, LOGIN_PASSWORD)));
    assert!(
        pulled.status.success(),
        "{}",
        String::from_utf8_lossy(&pulled.stderr)
    );
    assert!(
        std::fs::read(&out).expect("pulled") == annotated,
        "the module comes back byte for byte"
    );
}
