//! Decisions through kwctl, for users who have it. `kwctl run` writes the AdmissionResponse
//! alone on stdout; its log lines (with colour codes) and any refusal, such as settings the
//! policy rejects, go to stderr, with exit status 1.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use restage_gate_evaluation::admission::{read_request_file, Outcome};
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Kwctl {
    pub program: OsString,
    /// The module, annotated (`make annotated-policy.wasm`), as kwctl expects.
    pub module: PathBuf,
}

impl Kwctl {
    /// `kwctl run` on one request file. kwctl's stderr is shown only when it fails: on
    /// success it holds log lines only.
    pub fn run(&self, settings: &Value, request_path: &Path) -> Result<Outcome, String> {
        let request = read_request_file(request_path)?;
        let program = self.program.to_string_lossy();
        let output = Command::new(&self.program)
            .arg("run")
            .arg("--request-path")
            .arg(request_path)
            .arg("--settings-json")
            .arg(settings.to_string())
            .arg(&self.module)
            .output()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "{program} run {} failed ({}):\n{}",
                request_path.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr).trim_end()
            ));
        }
        let response: Value = serde_json::from_slice(&output.stdout).map_err(|e| {
            format!(
                "{program} run {}: its output is not one JSON document ({e}):\n{}",
                request_path.display(),
                String::from_utf8_lossy(&output.stdout).trim_end()
            )
        })?;
        Outcome::from_admission_response(&request, &response)
            .map_err(|e| format!("{program} run {}: {e}", request_path.display()))
    }
}
