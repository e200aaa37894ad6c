//! `make bench`: restage-gate against the parse-only floor, in the same wasmtime host and run.
//! Each case is evaluated by one long-lived instance of each module (as policy-server keeps
//! them); the table shows the median and the 10th-90th percentile spread per evaluation of the
//! whole path a user pays for (what policy-evaluator does on each call: build the guest's
//! payload, call the guest, then turn a mutated object into a JSONPatch), and the ratios of the
//! same without building the payload and of the guest alone.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use restage_gate_bench::figures::{self, machine, wall_block, Spread, Timed};
use restage_gate_bench::floor_path;
use restage_gate_e2e::host::{policy_path, Instance, Module};
use restage_gate_e2e::workloads::cases;
use restage_gate_evaluation::admission::Outcome;
use restage_gate_evaluation::evaluator::{payload, response, AdmissionRequest};
use serde_json::Value;

/// `cargo bench` passes `--bench`; `cargo test --all-targets` runs this once per case as a
/// smoke test of the intended paths, without timing anything worth reading.
fn full_run() -> bool {
    std::env::args().any(|a| a == "--bench")
}

fn module(path: PathBuf) -> Module {
    Module::load(&path).unwrap_or_else(|e| panic!("{e} (make bench builds it)"))
}

/// Timed calls of each module per case, after 30 warm-up calls.
const SAMPLES: usize = 301;

/// One module's times per call: the whole path, the same without building the payload (the
/// guest, the handling of its answer, freeing what the call built), and the guest's `validate`
/// alone.
struct Times {
    whole: Vec<Duration>,
    answered: Vec<Duration>,
    guest: Vec<Duration>,
}

/// Times both modules on the same request, alternating calls (and which one goes first) so a
/// slow spell of a shared machine falls on both alike.
fn measure(
    floor: &Instance,
    policy: &Instance,
    request: &AdmissionRequest,
    settings: &Value,
) -> [Times; 2] {
    let (warmup, samples) = if full_run() { (30, SAMPLES) } else { (1, 3) };
    let time = |instance: &Instance, times: &mut Times| {
        let start = Instant::now();
        let payload = payload(request, settings).expect("a payload");
        let built = start.elapsed();
        let out = instance
            .call("validate", payload.text.as_bytes())
            .expect("validate");
        let called = start.elapsed();
        let answer = response(&payload.request, &out).expect("an answer");
        // policy-evaluator frees what it built within the call
        drop((std::hint::black_box(answer), payload, out));
        let whole = start.elapsed();
        times.whole.push(whole);
        times.answered.push(whole - built);
        times.guest.push(called - built);
    };
    let times = |calls: usize| Times {
        whole: Vec::with_capacity(calls),
        answered: Vec::with_capacity(calls),
        guest: Vec::with_capacity(calls),
    };
    let mut warming = times(2 * warmup);
    for _ in 0..warmup {
        time(floor, &mut warming);
        time(policy, &mut warming);
    }
    let (mut f, mut p) = (times(samples), times(samples));
    for i in 0..samples {
        if i % 2 == 0 {
            time(floor, &mut f);
            time(policy, &mut p);
        } else {
            time(policy, &mut p);
            time(floor, &mut f);
        }
    }
    [f, p]
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
    let cases = cases();
    let mut rows = Vec::new();
    for case in &cases {
        let (request, settings) = (&case.payload["request"], &case.payload["settings"]);
        let typed = AdmissionRequest::from_value(request).expect("an admission request");
        let payload = payload(&typed, settings).expect("a payload");
        let answer = policy
            .call("validate", payload.text.as_bytes())
            .expect("validate");
        let answer: Value = serde_json::from_slice(&answer).expect("JSON");
        assert_eq!(
            Outcome::new(request, &answer).decision(),
            case.decision,
            "{}: the benchmark measures the intended path",
            case.name
        );
        let [f, p] = measure(&floor, &policy, &typed, settings);
        let median = |times: Vec<Duration>| spread(times).0;
        rows.push((
            case,
            Timed {
                request_kib: payload.text.len() as f64 / 1024.0,
                answered: median(p.answered) / median(f.answered),
                guest: median(p.guest) / median(f.guest),
                floor: spread(f.whole),
                policy: spread(p.whole),
            },
        ));
        eprintln!("measured: {}", case.name);
    }
    let block = wall_block(&machine(), SAMPLES, &rows);
    print!("{block}");
    if full_run() {
        figures::write(figures::WALL, &block).unwrap_or_else(|e| panic!("{e}"));
    }
}
