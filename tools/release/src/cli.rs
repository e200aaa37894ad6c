//! The command line of `restage-gate-release`, the release path without kwctl, producing what
//! kwctl produces:
//!
//! ```text
//! restage-gate-release annotate MODULE.wasm METADATA.yml README.md OUT.wasm
//! restage-gate-release push ANNOTATED.wasm REGISTRY/REPOSITORY:TAG [TRANSPORT]
//! restage-gate-release pull REGISTRY/REPOSITORY(:TAG|@DIGEST) OUT.wasm [TRANSPORT]
//! restage-gate-release keys DIR                  (COSIGN_PASSWORD encrypts DIR/cosign.key)
//! restage-gate-release sign REGISTRY/REPOSITORY(:TAG|@DIGEST) cosign.key [TRANSPORT]
//! restage-gate-release verify REGISTRY/REPOSITORY(:TAG|@DIGEST) cosign.pub [TRANSPORT]
//! restage-gate-release artifacthub METADATA.yml QUESTIONS-UI.yml NOW [EXISTING-artifacthub-pkg.yml]
//! restage-gate-release check-versions [PROJECT-DIR]
//! restage-gate-release kind-modules [PROJECT-DIR]      (`make kinds`' first step)
//! ```
//!
//! Registries are reached over HTTPS, and plain HTTP for loopback ones. TRANSPORT changes that:
//! `--sources-path FILE` reads a kwctl sources file as kwctl does (plain HTTP only for its
//! `insecure_sources`, loopback or not; its `source_authorities` trusted for their registries),
//! `--allow-http` uses plain HTTP anywhere. Credentials come from `REGISTRY_USERNAME` /
//! `REGISTRY_PASSWORD` (anonymous without them).
//!
//! `annotate` records the protocol version `metadata.yml` declares (`protocolVersion`), where
//! kwctl asks the module's `protocol_version`: reading it here would take a wasm runtime, and
//! the e2e suites check that the module answers what `metadata.yml` declares. `artifacthub`
//! keeps an existing package's `createdAt` for the same version, and takes NOW (RFC 3339 UTC)
//! for a new one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::oci::{self, Sources, Transport};
use crate::{kind_modules, metadata, versions};

const USAGE: &str = "usage: restage-gate-release annotate|push|pull|keys|sign|verify|artifacthub|check-versions|kind-modules … [--sources-path FILE | --allow-http] (see tools/release/src/cli.rs)";

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn read_bytes(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{path}: {e}"))
}

/// The transport options taken out of `args`, and the arguments left.
fn transport(args: &[String]) -> Result<(Transport, Vec<&str>), String> {
    let mut transport = Transport::HttpsExceptLoopback;
    let mut rest = Vec::new();
    let mut args = args.iter().map(String::as_str);
    while let Some(arg) = args.next() {
        match arg {
            "--allow-http" => transport = Transport::AllowHttp,
            "--sources-path" => {
                let path = args
                    .next()
                    .ok_or("--sources-path takes a file: a kwctl sources file (insecure_sources, source_authorities)")?;
                if transport != Transport::AllowHttp {
                    transport = Transport::Sources(Sources::read(Path::new(path))?);
                }
            }
            _ => rest.push(arg),
        }
    }
    Ok((transport, rest))
}

/// Runs one command; what it prints on success goes to stdout.
pub fn run(args: &[String]) -> Result<(), String> {
    let (transport, args) = transport(args)?;
    match args.as_slice() {
        ["annotate", module, meta, readme, out] => {
            let bytes = read_bytes(module)?;
            let declared = metadata::read_yaml(&read(meta)?)?;
            let protocol = metadata::declared_protocol(&declared)?;
            let m = metadata::annotated(&declared, &protocol, &read(readme)?)?;
            oci::write_atomically(Path::new(out), &metadata::embed(&bytes, &m)?)?;
            println!("{out}: annotated with {meta} (protocol {protocol})");
            Ok(())
        }
        ["push", module, reference] => {
            let pushed = oci::push(&read_bytes(module)?, reference, &transport)?;
            println!("{pushed}");
            Ok(())
        }
        ["pull", reference, out] => {
            let pulled = oci::pull(reference, &transport)?;
            oci::write_atomically(Path::new(out), &pulled.module)?;
            println!("{out}: pulled {reference} ({})", pulled.digest);
            Ok(())
        }
        [command @ ("keys" | "sign" | "verify"), rest @ ..] => signing(command, rest, &transport),
        ["artifacthub", meta, questions, now, rest @ ..] => {
            let m = metadata::read_yaml(&read(meta)?)?;
            let version = m["annotations"][metadata::VERSION]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let created = rest
                .first()
                .and_then(|existing| std::fs::read_to_string(existing).ok())
                .and_then(|text| versions::existing_created_at(&text, &version))
                .unwrap_or_else(|| now.to_string());
            print!(
                "{}",
                versions::artifacthub_pkg(&m, &read(questions)?, &created)?
            );
            Ok(())
        }
        ["check-versions", rest @ ..] => {
            let root = rest
                .first()
                .map_or_else(|| PathBuf::from("."), PathBuf::from);
            let problems = versions::disagreements(&root);
            if problems.is_empty() {
                return Ok(());
            }
            Err(format!(
                "versions disagree with Cargo.toml:\n  {}",
                problems.join("\n  ")
            ))
        }
        ["kind-modules", rest @ ..] => {
            let root = rest
                .first()
                .map_or_else(|| PathBuf::from("."), PathBuf::from);
            for file in kind_modules::write(&root)? {
                println!("{file}: written from its folder's files");
            }
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

/// keys, sign and verify: cosign's key pairs and signatures, through sigstore.
#[cfg(feature = "signing")]
fn signing(command: &str, args: &[&str], transport: &Transport) -> Result<(), String> {
    use crate::signing;
    match (command, args) {
        ("keys", [dir]) => {
            let pair = signing::generate_key_pair(
                Path::new(dir),
                signing::password_from_env()?.as_bytes(),
            )?;
            println!(
                "{}: private key, encrypted with {} (keep it secret, never commit it)",
                pair.private.display(),
                signing::PASSWORD_VAR
            );
            println!("{}: public key, for verifiers", pair.public.display());
            Ok(())
        }
        ("sign", [reference, key]) => {
            let password = signing::password_from_env()?;
            let signed = signing::sign(reference, Path::new(key), password.as_bytes(), transport)?;
            let done = if signed.already {
                "already signed"
            } else {
                "signed"
            };
            println!(
                "{}: {done} with {key} ({})",
                signed.artifact, signed.signature
            );
            Ok(())
        }
        ("verify", [reference, key]) => {
            let verified = signing::verify(reference, Path::new(key), transport)?;
            println!(
                "{}: signature verified with {key} ({} signature(s) in {})",
                verified.artifact, verified.signatures, verified.signature
            );
            Ok(())
        }
        _ => Err(USAGE.into()),
    }
}

/// `make push` and `make annotated-policy.wasm` build the tool without signing, which is most
/// of its build.
#[cfg(not(feature = "signing"))]
fn signing(command: &str, _: &[&str], _: &Transport) -> Result<(), String> {
    Err(format!(
        "{command}: built without the `signing` feature; `make {command}` builds it with it"
    ))
}

/// The tool's `main`: errors on stderr, prefixed with the tool's name, and exit status 1.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("restage-gate-release: {e}");
            ExitCode::FAILURE
        }
    }
}
