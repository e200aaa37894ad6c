//! `restage-gate-release`: the release path without kwctl, producing what kwctl produces.
//!
//!     restage-gate-release annotate MODULE.wasm METADATA.yml README.md OUT.wasm
//!     restage-gate-release push ANNOTATED.wasm REGISTRY/REPOSITORY:TAG [--allow-http]
//!     restage-gate-release pull REGISTRY/REPOSITORY(:TAG|@DIGEST) OUT.wasm [--allow-http]
//!     restage-gate-release keys DIR                  (COSIGN_PASSWORD encrypts DIR/cosign.key)
//!     restage-gate-release sign REGISTRY/REPOSITORY(:TAG|@DIGEST) cosign.key [--allow-http]
//!     restage-gate-release verify REGISTRY/REPOSITORY(:TAG|@DIGEST) cosign.pub [--allow-http]
//!     restage-gate-release artifacthub METADATA.yml QUESTIONS-UI.yml NOW [EXISTING-artifacthub-pkg.yml]
//!     restage-gate-release check-versions [PROJECT-DIR]
//!
//! `annotate` records the protocol version `metadata.yml` declares (`protocolVersion`), where
//! kwctl asks the module's `protocol_version`: reading it here would take a wasm runtime, and
//! the e2e suites check that the module answers what `metadata.yml` declares. `artifacthub`
//! keeps an existing package's `createdAt` for the same version, and takes NOW (RFC 3339 UTC)
//! for a new one.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use restage_gate_release::oci::{self, Transport};
use restage_gate_release::{metadata, versions};

fn read(path: &str) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))
}

fn read_bytes(path: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("{path}: {e}"))
}

fn run(args: &[String]) -> Result<(), String> {
    let transport = if args.iter().any(|a| a == "--allow-http") {
        Transport::AllowHttp
    } else {
        Transport::HttpsExceptLoopback
    };
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| *a != "--allow-http")
        .collect();
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
            let pushed = oci::push(&read_bytes(module)?, reference, transport)?;
            println!("{pushed}");
            Ok(())
        }
        ["pull", reference, out] => {
            let pulled = oci::pull(reference, transport)?;
            oci::write_atomically(Path::new(out), &pulled.module)?;
            println!("{out}: pulled {reference} ({})", pulled.digest);
            Ok(())
        }
        [command @ ("keys" | "sign" | "verify"), rest @ ..] => signing(command, rest, transport),
        ["artifacthub", meta, questions, now, rest @ ..] => {
            let m = metadata::read_yaml(&read(meta)?)?;
            let version = m["annotations"][metadata::VERSION].as_str().unwrap_or_default().to_string();
            let created = rest
                .first()
                .and_then(|existing| std::fs::read_to_string(existing).ok())
                .and_then(|text| versions::existing_created_at(&text, &version))
                .unwrap_or_else(|| now.to_string());
            print!("{}", versions::artifacthub_pkg(&m, &read(questions)?, &created)?);
            Ok(())
        }
        ["check-versions", rest @ ..] => {
            let root = rest.first().map_or_else(|| PathBuf::from("."), PathBuf::from);
            let problems = versions::disagreements(&root);
            if problems.is_empty() {
                return Ok(());
            }
            Err(format!("versions disagree with Cargo.toml:\n  {}", problems.join("\n  ")))
        }
        _ => Err("usage: restage-gate-release annotate|push|pull|keys|sign|verify|artifacthub|check-versions … (see the source header)".into()),
    }
}

/// keys, sign and verify: cosign's key pairs and signatures, through sigstore.
#[cfg(feature = "signing")]
fn signing(command: &str, args: &[&str], transport: Transport) -> Result<(), String> {
    use restage_gate_release::signing;
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
        _ => Err(format!(
            "usage: restage-gate-release {command} … (see the source header)"
        )),
    }
}

/// `make push` and `make annotated-policy.wasm` build the tool without signing, which is most
/// of its build.
#[cfg(not(feature = "signing"))]
fn signing(command: &str, _: &[&str], _: Transport) -> Result<(), String> {
    Err(format!(
        "{command}: built without the `signing` feature; `make {command}` builds it with it"
    ))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("restage-gate-release: {e}");
            ExitCode::FAILURE
        }
    }
}
