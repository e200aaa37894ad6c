//! `make bench-instructions`: the benchmark cases of `make bench`, counted in instructions
//! executed per `validate` call under valgrind's callgrind, for the floor and for restage-gate:
//! the whole path (the host's call into the guest, then what a policy server does with the
//! answer: decode it and, for a mutated object, diff, serialise and base64 the JSONPatch), and
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
use restage_gate_evaluation::admission::handle_answer;
use serde_json::Value;

const CALLS: usize = 10;

/// The guest's `validate` alone; its inclusive count is the guest-only figure.
#[inline(never)]
fn counted_call(instance: &Instance, payload: &[u8]) -> Vec<u8> {
    instance.call("validate", payload).expect("validate")
}

/// The function callgrind collects in (`--toggle-collect`): one call of the whole path, the
/// guest and then what a policy server does with its answer, after warm-up.
#[inline(never)]
fn counted_path(instance: &Instance, request: &Value, payload: &[u8]) {
    let answer = counted_call(instance, payload);
    std::hint::black_box(handle_answer(request, &answer).expect("an answer"));
}

fn calls(module: &str, case: usize, n: usize) {
    let module = Module::load(&PathBuf::from(module)).unwrap_or_else(|e| panic!("{e}"));
    let instance = module.instance().expect("instance");
    let case = &cases()[case].payload;
    let payload = serde_json::to_vec(case).expect("serialisable");
    for _ in 0..3 {
        instance.call("validate", &payload).expect("validate");
    }
    for _ in 0..n {
        counted_path(&instance, &case["request"], &payload);
    }
}

/// Instructions per call of `module` on case `case`, counted by callgrind: the whole path and
/// the guest alone.
fn count(module: &std::path::Path, case: usize) -> Result<(u64, u64), String> {
    let profile =
        std::env::temp_dir().join(format!("restage-gate-callgrind.{}", std::process::id()));
    let Run { log, .. } = run_self("counted_path", &[], &profile, (module, case, CALLS as u64))?;
    let whole = log
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("no instruction count in valgrind's output:\n{log}"))?;
    let guest = inclusive(&profile, "counted_call");
    let _ = std::fs::remove_file(&profile);
    Ok((whole / CALLS as u64, guest? / CALLS as u64))
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
    println!("| case | path | floor instructions | restage-gate instructions | ratio | target | guest-only ratio |");
    println!("|---|---|---|---|---|---|---|");
    let mut missed = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let ((f, f_guest), (p, p_guest)) = match (count(&floor, i), count(&policy, i)) {
            (Ok(f), Ok(p)) => (f, p),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("{e}");
                std::process::exit(1);
            }
        };
        let (label, target) = (case.path.label(), case.path.target());
        let ratio = p as f64 / f as f64;
        if ratio > target {
            missed.push(case.name.clone());
        }
        println!(
            "| {} | {label} | {} | {} | {ratio:.2} | ≤ {target} | {:.2} |",
            case.name,
            grouped(f),
            grouped(p),
            p_guest as f64 / f_guest as f64,
        );
    }
    if missed.is_empty() {
        println!("\nall cases within target");
    } else {
        println!("\ncases over target: {}", missed.join(", "));
    }
}
