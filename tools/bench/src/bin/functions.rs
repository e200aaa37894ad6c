//! `make profile-functions CASE=<n>`: where the guest's instructions go, by wasm function, on
//! one benchmark case (the cases of `make bench`, numbered from 0 in its table's order). The
//! module is built keeping its function names and compiled by an engine that writes a perf
//! map; callgrind counts the instructions of each machine-code address during `validate`
//! calls, and each address is named by the wasm function whose code holds it. The counts are
//! exclusive (a function's own instructions, not those of what it calls), per call; what runs
//! outside the module's code (the waPC host, wasmtime's builtins) is one line.
//!
//! Without arguments beyond the module and case it runs itself under valgrind; with `--calls
//! <module> <case> <calls>` it only makes the calls to count.

use std::path::{Path, PathBuf};

use restage_gate_bench::callgrind::{by_function, perf_map, run_self, short_name, Run};
use restage_gate_e2e::host::{Instance, Module};
use restage_gate_e2e::workloads::cases;
use restage_gate_evaluation::evaluator::{payload, AdmissionRequest};

const CALLS: u64 = 10;

/// The guest's `validate`; callgrind collects only inside it (`--toggle-collect`).
#[inline(never)]
fn counted_call(instance: &Instance, payload: &[u8]) -> Vec<u8> {
    instance.call("validate", payload).expect("validate")
}

fn calls(module: &str, case: usize, n: u64) {
    let module = Module::profiled(Path::new(module)).unwrap_or_else(|e| panic!("{e}"));
    let instance = module.instance().expect("instance");
    // the payload the benchmarks send, built as policy-evaluator builds it
    let case = &cases()[case].payload;
    let request = AdmissionRequest::from_value(&case["request"]).expect("an admission request");
    let payload = payload(&request, &case["settings"]).expect("a payload");
    for _ in 0..3 {
        instance
            .call("validate", payload.text.as_bytes())
            .expect("validate");
    }
    for _ in 0..n {
        std::hint::black_box(counted_call(&instance, payload.text.as_bytes()));
    }
}

fn profile(module: &Path, case: usize) -> Result<(), String> {
    let out = std::env::temp_dir().join(format!("restage-gate-functions.{}", std::process::id()));
    let options = [
        "--dump-instr=yes",
        "--compress-pos=no",
        "--compress-strings=no",
    ];
    let Run { pid, .. } = run_self(
        "counted_call",
        &options,
        &out,
        ("--calls", module, case, CALLS),
    )?;
    let map_path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    let map = std::fs::read_to_string(&map_path)
        .map(|text| perf_map(&text))
        .map_err(|e| format!("{}: {e}", map_path.display()))?;
    let text = std::fs::read_to_string(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&map_path);
    let mut counts: Vec<(String, u64)> = by_function(&text, &map).into_iter().collect();
    counts.sort_by_key(|(_, count)| std::cmp::Reverse(*count));
    let total: u64 = counts.iter().map(|(_, c)| c).sum();
    println!(
        "{}: {} instructions per call",
        cases()[case].name,
        total / CALLS
    );
    for (name, count) in counts.iter().take(40) {
        let share = 100.0 * *count as f64 / total as f64;
        println!("{:>9} {share:5.1}%  {}", count / CALLS, short_name(name));
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.as_slice() {
        [_, flag, module, case, n] if flag == "--calls" => calls(
            module,
            case.parse().expect("case"),
            n.parse().expect("calls"),
        ),
        [_, module, case] => {
            let case = case.parse().expect("a case number");
            if let Err(e) = profile(Path::new(module), case) {
                eprintln!("{e}");
                std::process::exit(1);
            }
        }
        _ => {
            eprintln!("usage: functions <module.wasm> <case>");
            std::process::exit(2);
        }
    }
}
