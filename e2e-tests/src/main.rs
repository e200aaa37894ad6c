//! `restage-gate-run`: evaluates admission requests with the compiled policy in the runtime
//! kwctl and policy-server use, and prints what `kwctl run` prints (the AdmissionResponse), or
//! one line per request with `--summary`.
//!
//!     restage-gate-run [--summary] [--settings-json JSON | --settings-path FILE] MODULE REQUEST...
//!     restage-gate-run --validate-settings [--settings-json JSON | --settings-path FILE] MODULE

use std::path::PathBuf;
use std::process::ExitCode;

use restage_gate_e2e::host::Module;
use restage_gate_evaluation::admission::read_request_file;
use restage_gate_evaluation::guest::Guest;
use restage_gate_evaluation::summary::summary_line;
use serde_json::{json, Value};

const USAGE: &str = "usage: restage-gate-run [--summary] [--validate-settings] \
[--settings-json JSON | --settings-path FILE] MODULE.wasm [REQUEST.json ...]";

struct Args {
    summary: bool,
    validate_settings: bool,
    settings: Value,
    module: PathBuf,
    requests: Vec<PathBuf>,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let mut summary = false;
    let mut validate_settings = false;
    let mut settings = json!({});
    let mut paths = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--summary" => summary = true,
            "--validate-settings" => validate_settings = true,
            "--settings-json" => {
                let text = args.next().ok_or("--settings-json needs a value")?;
                settings = serde_json::from_str(&text)
                    .map_err(|e| format!("--settings-json: not JSON: {e}"))?;
            }
            "--settings-path" => {
                let path = args.next().ok_or("--settings-path needs a file")?;
                let text = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                settings =
                    serde_json::from_str(&text).map_err(|e| format!("{path}: not JSON: {e}"))?;
            }
            "-h" | "--help" => return Err(USAGE.into()),
            flag if flag.starts_with("--") => return Err(format!("unknown flag {flag}\n{USAGE}")),
            path => paths.push(PathBuf::from(path)),
        }
    }
    if paths.is_empty() {
        return Err(USAGE.into());
    }
    let module = paths.remove(0);
    Ok(Args {
        summary,
        validate_settings,
        settings,
        module,
        requests: paths,
    })
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    let module = Module::load(&args.module)?;
    if args.validate_settings {
        return match module.validate_settings(&args.settings)? {
            None => {
                println!("{}", json!({"valid": true}));
                Ok(())
            }
            Some(message) => {
                println!("{}", json!({"valid": false, "message": message}));
                Err(format!("settings refused: {message}"))
            }
        };
    }
    for path in &args.requests {
        let request = read_request_file(path)?;
        let outcome = module.run(&args.settings, &request)?;
        if args.summary {
            let name = path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            println!("{}", summary_line(&name, &outcome));
        } else {
            let uid = request
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let pretty = serde_json::to_string_pretty(&outcome.admission_response(uid))
                .map_err(|e| e.to_string())?;
            println!("{pretty}");
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("restage-gate-run: {message}");
            ExitCode::FAILURE
        }
    }
}
