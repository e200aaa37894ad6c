//! `make bench`: restage-gate against the parse-only floor, in the same wasmtime host and run.
//! Each case is evaluated by one long-lived instance of each module (as `kwctl bench` keeps
//! one); the table shows the median and the 10th-90th percentile spread per evaluation of the
//! whole path a user pays for (what policy-evaluator does on each call: build the guest's
//! payload, call the guest, then turn a mutated object into a JSONPatch), and the ratios of the
//! same without building the payload and of the guest alone. Then each case again on a fresh
//! instance per request, instantiating it and dropping it included, as policy-server evaluates.

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

/// The whole path on a fresh instance per request: instantiating the module, the call and its
/// answer handled, the instance dropped, as policy-server evaluates.
fn measure_fresh(
    floor: &Module,
    policy: &Module,
    request: &AdmissionRequest,
    settings: &Value,
) -> [Vec<Duration>; 2] {
    alternate(floor, policy, |module, times| {
        let start = Instant::now();
        let instance = module.instance().expect("instance");
        let payload = payload(request, settings).expect("a payload");
        let out = instance
            .call("validate", payload.text.as_bytes())
            .expect("validate");
        let answer = response(&payload.request, &out).expect("an answer");
        drop((std::hint::black_box(answer), payload, out, instance));
        times.push(start.elapsed());
    })
}

/// One call's times: the whole path, the same without building the payload (the guest, the
/// handling of its answer, freeing what the call built), and the guest's `validate` alone.
struct Times {
    whole: Duration,
    answered: Duration,
    guest: Duration,
}

fn counts() -> (usize, usize) {
    if full_run() {
        (30, SAMPLES)
    } else {
        (1, 3)
    }
}

/// `time` on the floor and on restage-gate, alternating calls (and which one goes first) so a
/// slow spell of a shared machine falls on both alike, after the warm-up calls.
fn alternate<M, T>(floor: &M, policy: &M, mut time: impl FnMut(&M, &mut Vec<T>)) -> [Vec<T>; 2] {
    let (warmup, samples) = counts();
    let mut warming = Vec::with_capacity(2 * warmup);
    for _ in 0..warmup {
        time(floor, &mut warming);
        time(policy, &mut warming);
    }
    let (mut f, mut p) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
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

/// Times both modules on the same request, each on its long-lived instance.
fn measure(
    floor: &Instance,
    policy: &Instance,
    request: &AdmissionRequest,
    settings: &Value,
) -> [Vec<Times>; 2] {
    alternate(floor, policy, |instance, times| {
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
        times.push(Times {
            whole,
            answered: whole - built,
            guest: called - built,
        });
    })
}

fn spread(mut times: Vec<Duration>) -> Spread {
    times.sort();
    let n = times.len();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(times[n / 2]), us(times[n / 10]), us(times[n * 9 / 10]))
}

fn main() {
    let (policy_module, floor_module) = (module(policy_path()), module(floor_path()));
    let (policy, floor) = (
        policy_module.instance().expect("instance"),
        floor_module.instance().expect("instance"),
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
        let [fresh_f, fresh_p] = measure_fresh(&floor_module, &policy_module, &typed, settings);
        let part = |times: &[Times], part: fn(&Times) -> Duration| {
            spread(times.iter().map(part).collect())
        };
        let median =
            |p: &[Times], f: &[Times], of: fn(&Times) -> Duration| part(p, of).0 / part(f, of).0;
        rows.push((
            case,
            Timed {
                request_kib: payload.text.len() as f64 / 1024.0,
                answered: median(&p, &f, |t| t.answered),
                guest: median(&p, &f, |t| t.guest),
                floor: part(&f, |t| t.whole),
                policy: part(&p, |t| t.whole),
                fresh_floor: spread(fresh_f),
                fresh_policy: spread(fresh_p),
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
