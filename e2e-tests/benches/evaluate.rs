//! `make bench`: restage-gate against the parse-only floor, in the same wasmtime host and run.
//! Each case is evaluated by one long-lived instance of each module (as policy-server keeps
//! them); the table shows the median and the 10th-90th percentile spread per evaluation.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use restage_gate_e2e::host::{floor_path, policy_path, Instance, Module};
use restage_gate_e2e::workloads::cases;
use restage_gate_evaluation::admission::Outcome;
use serde_json::Value;

/// `cargo bench` passes `--bench`; `cargo test --all-targets` runs this once per case as a
/// smoke test of the intended paths, without timing anything worth reading.
fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn module(path: PathBuf) -> Module {
    Module::load(&path).unwrap_or_else(|e| panic!("{e} (make bench builds it)"))
}

/// Median, 10th and 90th percentile of per-call times, in µs.
type Spread = (f64, f64, f64);

/// Times both modules on the same payload, alternating calls (and which one goes first) so a
/// slow spell of a shared machine falls on both alike.
fn measure(floor: &Instance, policy: &Instance, payload: &[u8]) -> (Spread, Spread) {
    let (warmup, samples) = if full_run() { (30, 301) } else { (1, 3) };
    for _ in 0..warmup {
        floor.call("validate", payload).expect("validate");
        policy.call("validate", payload).expect("validate");
    }
    let time = |instance: &Instance| {
        let start = Instant::now();
        let out = instance.call("validate", payload).expect("validate");
        let elapsed = start.elapsed();
        std::hint::black_box(out);
        elapsed
    };
    let (mut f, mut p) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
    for i in 0..samples {
        if i % 2 == 0 {
            f.push(time(floor));
            p.push(time(policy));
        } else {
            p.push(time(policy));
            f.push(time(floor));
        }
    }
    (spread(f), spread(p))
}

fn spread(mut times: Vec<Duration>) -> Spread {
    times.sort();
    let n = times.len();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(times[n / 2]), us(times[n / 10]), us(times[n * 9 / 10]))
}

fn main() {
    let (policy, floor) = (module(policy_path()), module(floor_path()));
    let (policy, floor) = (
        policy.instance().expect("instance"),
        floor.instance().expect("instance"),
    );
    println!("| case | path | request KiB | floor µs (p10-p90) | restage-gate µs (p10-p90) | ratio | target |");
    println!("|---|---|---|---|---|---|---|");
    let mut missed = Vec::new();
    for case in cases() {
        let payload = serde_json::to_vec(&case.payload).expect("serialisable");
        let response: Value =
            serde_json::from_slice(&policy.call("validate", &payload).expect("validate"))
                .expect("JSON");
        let outcome = Outcome::new(&case.payload["request"], &response);
        assert_eq!(
            outcome.decision(),
            case.decision,
            "{}: the benchmark measures the intended path",
            case.name
        );
        let ((f, f10, f90), (p, p10, p90)) = measure(&floor, &policy, &payload);
        let (label, target) = (case.path.label(), case.path.target());
        let ratio = p / f;
        if ratio > target {
            missed.push(case.name.clone());
        }
        println!(
            "| {} | {label} | {:.1} | {f:.0} ({f10:.0}-{f90:.0}) | {p:.0} ({p10:.0}-{p90:.0}) | {ratio:.2} | ≤ {target} |",
            case.name,
            payload.len() as f64 / 1024.0,
        );
    }
    if missed.is_empty() {
        println!("\nall cases within target");
    } else {
        println!("\ncases over target: {}", missed.join(", "));
    }
}
