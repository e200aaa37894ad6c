//! `make bench-instructions`: the benchmark cases of `make bench`, counted in instructions
//! executed per `validate` call (host and guest) under valgrind's callgrind, for the floor and
//! for restage-gate. Wall time on a shared machine moves by tens of percent between runs;
//! instruction counts repeat, so this table shows what a change to the policy costs.
//!
//! Without arguments it runs itself under valgrind once per case and module; with
//! `--calls <module> <case index> <calls>` it only makes the calls to count.

use std::path::PathBuf;
use std::process::Command;

use restage_gate_e2e::host::{floor_path, policy_path, Instance, Module};
use restage_gate_e2e::workloads::cases;

const CALLS: usize = 10;

/// The function callgrind counts in (`--toggle-collect`): one call, after warm-up.
#[inline(never)]
fn counted_call(instance: &Instance, payload: &[u8]) -> Vec<u8> {
    instance.call("validate", payload).expect("validate")
}

fn calls(module: &str, case: usize, n: usize) {
    let module = Module::load(&PathBuf::from(module)).unwrap_or_else(|e| panic!("{e}"));
    let instance = module.instance().expect("instance");
    let payload = serde_json::to_vec(&cases()[case].payload).expect("serialisable");
    for _ in 0..3 {
        instance.call("validate", &payload).expect("validate");
    }
    for _ in 0..n {
        std::hint::black_box(counted_call(&instance, &payload));
    }
}

/// Instructions per call of `module` on case `case`, counted by callgrind.
fn count(module: &std::path::Path, case: usize) -> Result<u64, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--toggle-collect=*counted_call*",
            "--callgrind-out-file=/dev/null",
        ])
        .arg(&me)
        .arg("--calls")
        .arg(module)
        .args([case.to_string(), CALLS.to_string()])
        .output()
        .map_err(|e| format!("valgrind: {e} (apt-get install valgrind)"))?;
    let log = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("valgrind failed on case {case}:\n{log}"));
    }
    let total = log
        .lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("no instruction count in valgrind's output:\n{log}"))?;
    Ok(total / CALLS as u64)
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
    println!("| case | path | floor instructions | restage-gate instructions | ratio | target |");
    println!("|---|---|---|---|---|---|");
    let mut missed = Vec::new();
    for (i, case) in cases().iter().enumerate() {
        let (f, p) = match (count(&floor, i), count(&policy, i)) {
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
            "| {} | {label} | {} | {} | {ratio:.2} | ≤ {target} |",
            case.name,
            grouped(f),
            grouped(p),
        );
    }
    if missed.is_empty() {
        println!("\nall cases within target");
    } else {
        println!("\ncases over target: {}", missed.join(", "));
    }
}
