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
        match refusal(&output) {
            Some(message) => Ok(Some(message)),
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

/// The module's message from kwctl's refusal of settings: the settings validation response
/// kwctl prints on stdout, or else its error line, whose message is Rust's Debug form of an
/// `Option<String>` (`Some("…")`, the text escaped as JSON escapes it for the messages the module
/// writes).
fn refusal(output: &Output) -> Option<String> {
    let response: Option<Value> = serde_json::from_slice(&output.stdout).ok();
    if let Some(message) = response
        .filter(|r| r["valid"] == false)
        .and_then(|r| r["message"].as_str().map(str::to_string))
    {
        return Some(message);
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let message = stderr
        .lines()
        .find_map(|l| l.strip_prefix(SETTINGS_REFUSED))?;
    let quoted = message
        .strip_prefix("Some(")
        .and_then(|m| m.strip_suffix(')'))
        .unwrap_or(message);
    Some(serde_json::from_str(quoted).unwrap_or_else(|_| quoted.to_string()))
}

fn failed(program: &str, request_path: &Path, output: &Output) -> String {
    format!(
        "{program} run {} failed ({}):\n{}",
        request_path.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;
    use std::process::ExitStatus;

    fn output(stdout: &str, stderr: &str) -> Output {
        Output {
            status: ExitStatus::from_raw(1 << 8),
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
        }
    }

    #[test]
    fn a_settings_refusal_is_read_in_every_form_kwctl_writes_it() {
        let message = r#"settings.mode: "later" is not a mode; write "defer" or "reject""#;
        let json = serde_json::to_string(message).expect("JSON string");
        let forms = [
            output(&format!(r#"{{"valid":false,"message":{json}}}"#), ""),
            output("", &format!("log line\n{SETTINGS_REFUSED}Some({json})\n")),
            output("", &format!("{SETTINGS_REFUSED}{json}\n")),
            output("", &format!("{SETTINGS_REFUSED}{message}\n")),
        ];
        for form in &forms {
            assert_eq!(refusal(form).as_deref(), Some(message), "{form:?}");
        }
        assert_eq!(refusal(&output("", "Error: no such file\n")), None);
    }
}
