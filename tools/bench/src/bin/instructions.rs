//! `make bench-instructions`: the benchmark cases of `make bench`, counted in instructions
//! executed per `validate` call under valgrind's callgrind, for the floor and for restage-gate:
//! the whole path (what policy-evaluator does on each call: build the guest's payload from the
//! request, call the guest, then turn its answer into an AdmissionResponse, diffing, serialising
//! and base64ing the JSONPatch of a mutated object, and free what it built), the same without
//! building the payload, and the guest's call alone; then each part on its own; then the whole
//! path on a fresh instance per request (instantiate the module, the whole path, drop the
//! instance), as policy-server evaluates. Wall time on a shared machine varies between runs;
//! instruction counts repeat, so these tables show what a change to the policy costs.
//!
//! Without arguments it runs itself under valgrind once per case, module and path; with
//! `--calls <module> <case index> <calls>` it only makes the calls to count on one long-lived
//! instance, with `--fresh-calls` each on a fresh instance.

use std::path::PathBuf;
use std::process::Command;

use restage_gate_bench::callgrind::{run_self, Run};
use restage_gate_bench::figures::{self, instructions_block, machine, Count, FreshCount};
use restage_gate_bench::floor_path;
use restage_gate_e2e::host::{policy_path, Instance, Module};
use restage_gate_e2e::workloads::cases;
use restage_gate_evaluation::evaluator::{payload, response, AdmissionRequest, Payload, Response};
use serde_json::Value;

const CALLS: usize = 10;

/// Building the guest's payload; its inclusive count is the payload figure.
#[inline(never)]
fn counted_payload(request: &AdmissionRequest, settings: &Value) -> Payload {
    payload(request, settings).expect("a payload")
}

/// The guest's `validate` alone; its inclusive count is the guest-only figure.
#[inline(never)]
fn counted_call(instance: &Instance, payload: &[u8]) -> Vec<u8> {
    instance.call("validate", payload).expect("validate")
}

/// The policy server's handling of the guest's answer; its inclusive count is the answer
/// figure.
#[inline(never)]
fn counted_answer(request: &Value, answer: &[u8]) -> Response {
    response(request, answer).expect("an answer")
}

/// One whole `validate` call as policy-evaluator makes it, freeing what it built at the end.
fn path(instance: &Instance, request: &AdmissionRequest, settings: &Value) {
    let payload = counted_payload(request, settings);
    let answer = counted_call(instance, payload.text.as_bytes());
    std::hint::black_box(counted_answer(&payload.request, &answer));
}

/// The function callgrind collects in (`--toggle-collect`), so the warm-up calls are not
/// counted.
#[inline(never)]
fn counted_path(instance: &Instance, request: &AdmissionRequest, settings: &Value) {
    path(instance, request, settings)
}

/// A fresh instance of the module, as policy-server makes one for every request; its
/// inclusive count is the instantiation figure.
#[inline(never)]
fn counted_instance(module: &Module) -> Instance {
    module.instance().expect("instance")
}

/// One request as policy-server evaluates it: a fresh instance, the whole path, and the
/// instance dropped once the answer is handled. Callgrind collects in it for the fresh path.
#[inline(never)]
fn counted_fresh(module: &Module, request: &AdmissionRequest, settings: &Value) {
    let instance = counted_instance(module);
    path(&instance, request, settings);
    drop(instance);
}

fn calls(module: &str, case: usize, n: usize, fresh: bool) {
    let module = Module::load(&PathBuf::from(module)).unwrap_or_else(|e| panic!("{e}"));
    let case = &cases()[case].payload;
    let request = AdmissionRequest::from_value(&case["request"]).expect("an admission request");
    let settings = &case["settings"];
    if fresh {
        for _ in 0..3 {
            path(&module.instance().expect("instance"), &request, settings);
        }
        for _ in 0..n {
            counted_fresh(&module, &request, settings);
        }
        return;
    }
    let instance = module.instance().expect("instance");
    for _ in 0..3 {
        path(&instance, &request, settings);
    }
    for _ in 0..n {
        counted_path(&instance, &request, settings);
    }
}

/// What callgrind collected in all, from its log.
fn collected(log: &str) -> Result<u64, String> {
    log.lines()
        .find_map(|l| l.split("Collected :").nth(1))
        .and_then(|n| n.trim().parse::<u64>().ok())
        .ok_or_else(|| format!("no instruction count in valgrind's output:\n{log}"))
}

fn profile_file() -> PathBuf {
    std::env::temp_dir().join(format!("restage-gate-callgrind.{}", std::process::id()))
}

/// Instructions per call of `module` on case `case` on one long-lived instance, counted by
/// callgrind.
fn count(module: &std::path::Path, case: usize) -> Result<Count, String> {
    let profile = profile_file();
    let calls = ("--calls", module, case, CALLS as u64);
    let Run { log, .. } = run_self("counted_path", &[], &profile, calls)?;
    let whole = collected(&log)?;
    let (payload, guest, answer) = (
        inclusive(&profile, "counted_payload"),
        inclusive(&profile, "counted_call"),
        inclusive(&profile, "counted_answer"),
    );
    let _ = std::fs::remove_file(&profile);
    let per_call = |n: u64| n / CALLS as u64;
    let count = Count {
        whole: per_call(whole),
        payload: per_call(payload?),
        guest: per_call(guest?),
        answer: per_call(answer?),
    };
    count.freeing()?;
    Ok(count)
}

/// Instructions per request of `module` on case `case`, each on a fresh instance.
fn count_fresh(module: &std::path::Path, case: usize) -> Result<FreshCount, String> {
    let profile = profile_file();
    let calls = ("--fresh-calls", module, case, CALLS as u64);
    let Run { log, .. } = run_self("counted_fresh", &[], &profile, calls)?;
    let whole = collected(&log)?;
    let instance = inclusive(&profile, "counted_instance");
    let _ = std::fs::remove_file(&profile);
    Ok(FreshCount {
        whole: whole / CALLS as u64,
        instance: instance? / CALLS as u64,
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

/// The value, or the error said and the program ended.
fn or_exit<T>(result: Result<T, String>) -> T {
    result.unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1);
    })
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let [_, flag, module, case, n] = args.as_slice() {
        if flag == "--calls" || flag == "--fresh-calls" {
            return calls(
                module,
                case.parse().expect("case"),
                n.parse().expect("calls"),
                flag == "--fresh-calls",
            );
        }
    }
    let (policy, floor) = (policy_path(), floor_path());
    let cases = cases();
    let (mut rows, mut fresh) = (Vec::new(), Vec::new());
    for (i, case) in cases.iter().enumerate() {
        rows.push((case, or_exit(count(&floor, i)), or_exit(count(&policy, i))));
        fresh.push((
            or_exit(count_fresh(&floor, i)),
            or_exit(count_fresh(&policy, i)),
        ));
        eprintln!("counted: {}", case.name);
    }
    let block = instructions_block(&machine(), CALLS, &rows, &fresh);
    print!("{block}");
    if let Err(e) = figures::write(figures::INSTRUCTIONS, &block) {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
