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

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use restage_gate_e2e::host::{Instance, Module};
use restage_gate_e2e::workloads::cases;

const CALLS: u64 = 10;

/// The guest's `validate`; callgrind collects only inside it (`--toggle-collect`).
#[inline(never)]
fn counted_call(instance: &Instance, payload: &[u8]) -> Vec<u8> {
    instance.call("validate", payload).expect("validate")
}

fn calls(module: &str, case: usize, n: u64) {
    let module = Module::profiled(Path::new(module)).unwrap_or_else(|e| panic!("{e}"));
    let instance = module.instance().expect("instance");
    let payload = serde_json::to_vec(&cases()[case].payload).expect("serialisable");
    for _ in 0..3 {
        instance.call("validate", &payload).expect("validate");
    }
    for _ in 0..n {
        std::hint::black_box(counted_call(&instance, &payload));
    }
}

/// Machine-code ranges by start address, with the wasm function each holds.
fn perf_map(path: &Path) -> Result<BTreeMap<u64, (u64, String)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ' ');
            let (start, len, name) = (hex(parts.next()?)?, hex(parts.next()?)?, parts.next()?);
            Some((start, (start + len, name.to_string())))
        })
        .collect())
}

/// Instructions by function name from a callgrind profile written with `--dump-instr=yes
/// --compress-pos=no`: each cost line is `<address> <line> <count>`; the line after a
/// `calls=` line is the call's inclusive cost, left out.
fn by_function(profile: &str, map: &BTreeMap<u64, (u64, String)>) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let mut after_call = false;
    for line in profile.lines() {
        if line.starts_with("calls=") {
            after_call = true;
            continue;
        }
        let mut fields = line.split_whitespace();
        let (Some(address), Some(_), Some(count), None) =
            (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (Some(address), Ok(count)) = (
            address
                .strip_prefix("0x")
                .and_then(|a| u64::from_str_radix(a, 16).ok()),
            count.parse::<u64>(),
        ) else {
            continue;
        };
        if std::mem::take(&mut after_call) {
            continue;
        }
        let name = match map.range(..=address).next_back() {
            Some((_, (end, name))) if address < *end => name.as_str(),
            _ => "(outside the module: the waPC host, wasmtime)",
        };
        *counts.entry(name.to_string()).or_insert(0) += count;
    }
    counts
}

fn profile(module: &Path, case: usize) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::env::temp_dir().join(format!("restage-gate-functions.{}", std::process::id()));
    let child = Command::new("valgrind")
        .args([
            "--tool=callgrind",
            "--toggle-collect=*counted_call*",
            "--dump-instr=yes",
        ])
        .args(["--compress-pos=no", "--compress-strings=no"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(&me)
        .arg("--calls")
        .arg(module)
        .args([case.to_string(), CALLS.to_string()])
        .spawn()
        .map_err(|e| format!("valgrind: {e} (apt-get install valgrind)"))?;
    // valgrind runs the program in its own process: the perf map is named after its pid.
    let pid = child.id();
    let status = child.wait_with_output().map_err(|e| e.to_string())?.status;
    if !status.success() {
        return Err(format!("valgrind failed on case {case}"));
    }
    let map_path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
    let map = perf_map(&map_path)?;
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
        println!("{:>9} {share:5.1}%  {name}", count / CALLS);
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
