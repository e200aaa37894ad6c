//! `make bench-instructions`: the benchmark cases of `make bench`, counted in instructions
//! executed per `validate` call under valgrind's callgrind, for the floor and for restage-gate:
//! the whole path (what policy-evaluator does on each call: build the guest's payload from the
//! request, call the guest, then turn its answer into an AdmissionResponse, diffing, serialising
//! and base64ing the JSONPatch of a mutated object), the same without building the payload, and
//! the guest's call alone. Wall time on a shared machine moves by tens of percent between runs;
//! instruction counts repeat, so this table shows what a change to the policy costs.
//!
//! Without arguments it runs itself under valgrind once per case and module; with
//! `--calls <module> <case index> <calls>` it only makes the calls to count.

use std::path::PathBuf;
use std::process::Command;

use restage_gate_e2e::callgrind::{run_self, Run};
use restage_gate_e2e::host::{floor_path, policy_path, Instance, Module};
use restage_gate_e2e::workloads::cases;
use restage_gate_evaluation::evaluator::{payload, response, AdmissionRequest, Response};
use serde_json::Value;

const CALLS: usize = 10;

/// The guest's `validate` alone; its inclusive count is the guest-only figure.
#[inline(never)]
fn counted_call(instance: &Instance, payload: &[u8]) -> Vec<u8> {
    instance.call("validate", payload).expect("validate")
}

/// The policy server's handling of the guest's answer.
#[inline(never)]
fn counted_answer(request: &Value, answer: &[u8]) -> Response {
    response(request, answer).expect("an answer")
}

/// The function callgrind collects in (`--toggle-collect`): one whole `validate` call as
/// policy-evaluator makes it, after warm-up.
#[inline(never)]
fn counted_path(instance: &Instance, request: &AdmissionRequest, settings: &Value) {
    let payload = payload(request, settings).expect("a payload");
    let answer = counted_call(instance, payload.text.as_bytes());
    std::hint::black_box(counted_answer(&payload.request, &answer));
}

fn calls(module: &str, case: usize, n: usize) {
    let module = Module::load(&PathBuf::from(module)).unwrap_or_else(|e| panic!("{e}"));
    let instance = module.instance().expect("instance");
    let case = &cases()[case].payload;
    let request = AdmissionRequest::from_value(&case["request"]).expect("an admission request");
    for _ in 0..3 {
        let payload = payload(&request, &case["settings"]).expect("a payload");
        instance
            .call("validate", payload.text.as_bytes())
            .expect("validate");
    }
    for _ in 0..n {
        counted_path(&instance, &request, &case["settings"]);
    }
}

/// Instructions per call of one module on one case.
struct Count {
    whole: u64,
    guest: u64,
    answer: u64,
}

enum Part {
    Payload,
    Guest,
    Answer,
}

impl Count {
    /// The path without building the payload: the guest and the handling of its answer.
    fn answered(&self) -> u64 {
        self.guest + self.answer
    }

    fn part(&self, part: Part) -> String {
        grouped(match part {
            Part::Payload => self.whole.saturating_sub(self.answered()),
            Part::Guest => self.guest,
            Part::Answer => self.answer,
        })
    }
}

/// Instructions per call of `module` on case `case`, counted by callgrind.
fn count(module: &std::path::Path, case: usize) -> Result<Count, String> {
    let profile =
        std::env::temp_dir().join(format!("restage-gate-callgrind.{}", std::process::id()));
    let Run { log, .. } = run_self("counted_path", &[], &profile, (module, case, CALLS as u64))?;
    let whole = log
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("no instruction count in valgrind's output:\n{log}"))?;
    let (guest, answer) = (
        inclusive(&profile, "counted_call"),
        inclusive(&profile, "counted_answer"),
    );
    let _ = std::fs::remove_file(&profile);
    let per_call = |n: u64| n / CALLS as u64;
    Ok(Count {
        whole: per_call(whole),
        guest: per_call(guest?),
        answer: per_call(answer?),
    })
}

/// The inclusive count of the function whose name contains `name`, as callgrind_annotate
/// reports it.
fn inclusive(profile: &std::path::Path, name: &str) -> Result<u64, String> {
    let out = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(profile)
        .output()
        .map_err(|e| format!("callgrind_annotate: {e} (it comes with valgrind)"))?;
    let report = String::from_utf8_lossy(&out.stdout);
    report
        .lines()
        .filter(|l| l.contains(name))
        .find_map(|l| l.split_whitespace().next()?.replace(',', "").parse().ok())
        .ok_or_else(|| format!("no count for {name} in callgrind_annotate's report:\n{report}"))
}

/// 1120878 → 1,120,878
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, module, case, n] = args.as_slice() {
        if flag == "--calls" {
            return calls(
                module,
                case.parse().expect("case"),
                n.parse().expect("calls"),
            );
        }
    }
    let (policy, floor) = (policy_path(), floor_path());
    println!("| case | path | floor instructions | restage-gate instructions | ratio | target | ratio without the payload | guest-only ratio |");
    println!("|---|---|---|---|---|---|---|---|");
    let (mut missed, mut parts) = (Vec::new(), Vec::new());
    for (i, case) in cases().iter().enumerate() {
        let (f, p) = match (count(&floor, i), count(&policy, i)) {
            (Ok(f), Ok(p)) => (f, p),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        let (label, target) = (case.path.label(), case.path.target());
        let ratio = |p: u64, f: u64| p as f64 / f as f64;
        let whole = ratio(p.whole, f.whole);
        if whole > target {
            missed.push(case.name.clone());
        }
        println!(
            "| {} | {label} | {} | {} | {whole:.2} | ≤ {target} | {:.2} | {:.2} |",
            case.name,
            grouped(f.whole),
            grouped(p.whole),
            ratio(p.answered(), f.answered()),
            ratio(p.guest, f.guest),
        );
        parts.push(format!(
            "| {} | {} | {} | {} | {} | {} | {} |",
            case.name,
            f.part(Part::Payload),
            f.part(Part::Guest),
            f.part(Part::Answer),
            p.part(Part::Payload),
            p.part(Part::Guest),
            p.part(Part::Answer),
        ));
    }
    println!("\nThe same per part, floor then restage-gate: building the payload, the guest, the handling of its answer:\n");
    println!("| case | floor payload | floor guest | floor answer | restage-gate payload | restage-gate guest | restage-gate answer |");
    println!("|---|---|---|---|---|---|---|");
    for row in parts {
        println!("{row}");
    }
    if missed.is_empty() {
        println!("\nall cases within target");
    } else {
        println!("\ncases over target: {}", missed.join(", "));
    }
}
