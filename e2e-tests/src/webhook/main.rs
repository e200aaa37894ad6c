//! `restage-gate-webhook`: serves restage-gate to a kube-apiserver as Kubewarden's policy-server
//! does, from policy-server's own `policies.yml`, over HTTPS: `POST /validate/<policy-id>` with
//! an AdmissionReview, answered by a fresh instance of the policy's module; `GET /readiness`.
//!
//!     restage-gate-webhook --policies FILE --cert CERT.pem --key KEY.pem --listen ADDR:PORT
//!                          [--ready-file PATH]
//!
//! It listens on the address given and no other; with port 0 the system picks one, and
//! `--ready-file` receives the address bound once the server listens. Policies whose module
//! cannot be loaded or whose settings the module refuses stop the start (exit status 1).

mod policies;
mod review;
mod server;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: restage-gate-webhook --policies FILE --cert CERT.pem --key KEY.pem \
--listen ADDR:PORT [--ready-file PATH]";

struct Args {
    policies: PathBuf,
    server: server::Config,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Args, String> {
    let mut args = args;
    let (mut policies, mut cert, mut key, mut listen, mut ready_file) =
        (None, None, None, None, None);
    while let Some(flag) = args.next() {
        let slot = match flag.as_str() {
            "--policies" => &mut policies,
            "--cert" => &mut cert,
            "--key" => &mut key,
            "--listen" => &mut listen,
            "--ready-file" => &mut ready_file,
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        };
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value\n{USAGE}"))?;
        *slot = Some(value);
    }
    let required = |value: Option<String>, flag: &str| {
        value.ok_or_else(|| format!("{flag} is required\n{USAGE}"))
    };
    let listen = required(listen, "--listen")?;
    let listen: SocketAddr = listen.parse().map_err(|e| {
        format!("--listen {listen:?}: {e}; give an IP address and a port, e.g. 127.0.0.1:8443")
    })?;
    Ok(Args {
        policies: required(policies, "--policies")?.into(),
        server: server::Config {
            listen,
            cert: required(cert, "--cert")?.into(),
            key: required(key, "--key")?.into(),
            ready_file: ready_file.map(PathBuf::from),
        },
    })
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("restage-gate-webhook: {message}");
            return ExitCode::from(2);
        }
    };
    let started = policies::load(&args.policies).and_then(|p| server::serve(p, args.server));
    match started {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("restage-gate-webhook: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Args, String> {
        parse_args(args.iter().map(|a| a.to_string()))
    }

    #[test]
    fn every_flag_reads_and_the_listen_address_must_be_an_ip_and_port() {
        let args = parse(&[
            "--policies",
            "policies.yml",
            "--cert",
            "c.pem",
            "--key",
            "k.pem",
            "--listen",
            "127.0.0.1:0",
            "--ready-file",
            "ready",
        ])
        .unwrap();
        assert_eq!(args.policies, PathBuf::from("policies.yml"));
        assert_eq!(args.server.listen, "127.0.0.1:0".parse().unwrap());
        assert_eq!(args.server.ready_file, Some(PathBuf::from("ready")));
        let error = parse(&[
            "--policies",
            "p",
            "--cert",
            "c",
            "--key",
            "k",
            "--listen",
            "localhost",
        ])
        .err()
        .unwrap();
        assert!(error.starts_with("--listen \"localhost\""), "{error}");
        let missing = parse(&["--policies", "p"]).err().unwrap();
        assert!(missing.starts_with("--listen is required"), "{missing}");
    }
}
