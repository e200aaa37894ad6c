//! `make demo`: the bundled requests, each explained, then decided by the compiled policy,
//! through kwctl when it is installed, otherwise in a small waPC host on the wasmi interpreter.

pub mod check_settings;
#[cfg(feature = "interpreter")]
pub mod interpreter;
pub mod kwctl;
pub mod steps;

use std::io::Write;
use std::path::Path;
use std::time::SystemTime;

use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::summary::summary_line;
use serde_json::Value;

/// What evaluates the requests.
#[derive(Debug)]
pub enum Runner {
    Kwctl(kwctl::Kwctl),
    #[cfg(feature = "interpreter")]
    Interpreter(interpreter::Module),
}

impl Runner {
    pub fn evaluate(&self, settings: &Value, request_path: &Path) -> Result<Outcome, String> {
        match self {
            Runner::Kwctl(kwctl) => kwctl.run(settings, request_path),
            #[cfg(feature = "interpreter")]
            Runner::Interpreter(module) => {
                use restage_gate_evaluation::admission::read_request_file;
                use restage_gate_evaluation::guest::Guest;
                module.run(settings, &read_request_file(request_path)?)
            }
        }
    }

    /// What the module says of `settings`: `None` when it accepts them, otherwise its message.
    /// kwctl checks settings only on its way to evaluating a request, `request_path`.
    pub fn validate_settings(
        &self,
        settings: &Value,
        request_path: &Path,
    ) -> Result<Option<String>, String> {
        match self {
            Runner::Kwctl(kwctl) => kwctl.validate_settings(settings, request_path),
            #[cfg(feature = "interpreter")]
            Runner::Interpreter(module) => {
                use restage_gate_evaluation::guest::Guest;
                module.validate_settings(settings)
            }
        }
    }
}

/// Every step of the demo, run now.
pub fn show(runner: &Runner, requests: &Path, out: &mut impl Write) -> Result<(), String> {
    show_at(runner, requests, SystemTime::now(), out)
}

/// Every step of the demo, with the settings for a run at `now`: its account of the request,
/// the settings when there are any, then the decision, one line (plus the message and
/// warnings).
pub fn show_at(
    runner: &Runner,
    requests: &Path,
    now: SystemTime,
    out: &mut impl Write,
) -> Result<(), String> {
    for (n, step) in steps::STEPS.iter().enumerate() {
        let settings =
            (step.settings.at(now)).map_err(|e| format!("{}: settings: {e}", step.title))?;
        let outcome = runner.evaluate(&settings, &requests.join(step.request))?;
        let shown = match settings.as_object() {
            Some(fields) if !fields.is_empty() => format!("   settings: {settings}\n"),
            _ => String::new(),
        };
        writeln!(
            out,
            "\n{}. {}\n{}\n\n{shown}{}",
            n + 1,
            step.title,
            wrap(step.explanation, 92, "   "),
            indent(&summary_line(step.request, &outcome), "   ")
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `text` in lines of at most `width` columns (longer words stand alone), each after `prefix`.
fn wrap(text: &str, width: usize, prefix: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if line.len() + 1 + word.len() <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    indent(&lines.join("\n"), prefix)
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|line| format!("{prefix}{line}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_breaks_between_words_within_the_width() {
        let text = "one two three four five six seven eight nine ten";
        assert_eq!(
            wrap(text, 14, "  "),
            "  one two three\n  four five six\n  seven eight\n  nine ten"
        );
        assert_eq!(wrap("unbreakable-word x", 5, ""), "unbreakable-word\nx");
    }
}
