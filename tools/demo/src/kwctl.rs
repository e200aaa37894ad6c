//! Decisions through kwctl, for users who have it. `kwctl run` writes the AdmissionResponse
//! alone on stdout; its log lines (with colour codes) and any refusal, such as settings the
//! policy rejects, go to stderr, with exit status 1.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use restage_gate_evaluation::admission::{read_request_file, Outcome};
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Kwctl {
    pub program: OsString,
    /// The module, annotated (`make annotated-policy.wasm`), as kwctl expects.
    pub module: PathBuf,
}

/// How kwctl 1.35 starts its refusal of settings on stderr; the module's message follows.
pub const SETTINGS_REFUSED: &str = "Error: Provided settings are not valid: ";

impl Kwctl {
    /// `kwctl run` on one request file. kwctl's stderr is shown only when it fails: on
    /// success it holds log lines only.
    pub fn run(&self, settings: &Value, request_path: &Path) -> Result<Outcome, String> {
        let request = read_request_file(request_path)?;
        let program = self.program.to_string_lossy();
        let output = self.execute(settings, request_path)?;
        if !output.status.success() {
            return Err(failed(&program, request_path, &output));
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

    /// What kwctl says of `settings` on its way to evaluating `request_path`: `None` when the
    /// module accepts them, otherwise the module's message from kwctl's refusal.
    pub fn validate_settings(
        &self,
        settings: &Value,
        request_path: &Path,
    ) -> Result<Option<String>, String> {
        let output = self.execute(settings, request_path)?;
        if output.status.success() {
            return Ok(None);
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        match stderr
            .lines()
            .find_map(|l| l.strip_prefix(SETTINGS_REFUSED))
        {
            Some(message) => Ok(Some(message.to_string())),
            None => Err(failed(
                &self.program.to_string_lossy(),
                request_path,
                &output,
            )),
        }
    }

    fn execute(&self, settings: &Value, request_path: &Path) -> Result<Output, String> {
        Command::new(&self.program)
            .arg("run")
            .arg("--request-path")
            .arg(request_path)
            .arg("--settings-json")
            .arg(settings.to_string())
            .arg(&self.module)
            .output()
            .map_err(|e| format!("cannot run {}: {e}", self.program.to_string_lossy()))
    }
}

fn failed(program: &str, request_path: &Path, output: &Output) -> String {
    format!(
        "{program} run {} failed ({}):\n{}",
        request_path.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim_end()
    )
}
