//! The benchmarks' tables, as they are written into `docs/performance.md`: `make bench` fills
//! the block between `<!-- bench:begin -->` and `<!-- bench:end -->`, `make
//! bench-instructions` the one between `<!-- bench-instructions:begin -->` and its end, each
//! with the command and the machine it ran on. `make test` checks that each block has the shape
//! the tools write now (the same cases and columns), whatever the figures.

use restage_gate_e2e::workloads::Case;
use restage_gate_release::repository;

/// Where the blocks are.
pub const DOC: &str = "docs/performance.md";
/// The block `make bench` writes.
pub const WALL: &str = "bench";
/// The block `make bench-instructions` writes.
pub const INSTRUCTIONS: &str = "bench-instructions";

/// Median, 10th and 90th percentile, in µs.
pub type Spread = (f64, f64, f64);

/// One case of `make bench`.
#[derive(Debug, Clone, Default)]
pub struct Timed {
    pub request_kib: f64,
    pub floor: Spread,
    pub policy: Spread,
    /// restage-gate's median over the floor's, without building the payload.
    pub answered: f64,
    /// The same for the guest's call alone.
    pub guest: f64,
    /// The whole path on a fresh instance per request (instantiating it included), as
    /// policy-server evaluates.
    pub fresh_floor: Spread,
    pub fresh_policy: Spread,
}

/// Instructions per call of one module on one case: the whole path and its parts.
#[derive(Debug, Clone, Copy, Default)]
pub struct Count {
    pub whole: u64,
    pub payload: u64,
    pub guest: u64,
    pub answer: u64,
}

impl Count {
    /// The path without building the payload: the guest, the handling of its answer and
    /// freeing what the call built, as `make bench` times it.
    pub fn answered(&self) -> u64 {
        self.whole.saturating_sub(self.payload)
    }

    /// What the whole path spends outside its three parts: freeing the payload, the answer
    /// and the response.
    pub fn freeing(&self) -> Result<u64, String> {
        let parts = self.payload + self.guest + self.answer;
        self.whole.checked_sub(parts).ok_or_else(|| {
            format!(
                "the parts ({parts}) count more than the whole ({})",
                self.whole
            )
        })
    }
}

/// Instructions per request of one module on one case on a fresh instance, as policy-server
/// evaluates: the whole (instantiating, the whole path, dropping the instance) and the
/// instantiating.
#[derive(Debug, Clone, Copy, Default)]
pub struct FreshCount {
    pub whole: u64,
    pub instance: u64,
}

/// The table of the cases on a fresh instance per request, its heading included; `row` writes
/// a row's figures after its case and path.
fn fresh_table<T>(
    rows: &[(&Case, T)],
    columns: &str,
    missed: &mut Vec<String>,
    row: impl Fn(&T) -> (f64, String),
) -> String {
    let mut out = format!(
        "\nEach case on a fresh instance per request, as policy-server evaluates (it instantiates \
         the module for every request, then makes the same call; [why](#the-path-measured)), \
         the same run:\n\n\
         | case | path | {columns} |\n\
         |---|---|{}\n",
        "---|".repeat(columns.split(" | ").count())
    );
    for (case, figures) in rows {
        let (label, target) = (case.path.label(), case.path.target());
        let (ratio, figures) = row(figures);
        if ratio > target {
            missed.push(format!("{} (fresh instance)", case.name));
        }
        out.push_str(&format!("| {} | {label} | {figures} |\n", case.name));
    }
    out
}

/// The block `make bench` writes.
pub fn wall_block(machine: &str, samples: usize, rows: &[(&Case, Timed)]) -> String {
    let mut out = format!(
        "`make bench` on {machine}: wall time per call, median and 10th-90th percentile over \
         {samples} calls of each module, alternating between them, first each on one long-lived \
         instance (as `kwctl bench` keeps one). Whole path (policy-evaluator's `validate`: the guest's payload, the guest, \
         the handling of its answer), and the ratios without building the payload and of the \
         guest alone.\n\n\
         | case | path | request KiB | floor µs (p10-p90) | restage-gate µs (p10-p90) | ratio | target | ratio without the payload | guest-only ratio |\n\
         |---|---|---|---|---|---|---|---|---|\n"
    );
    let mut missed = Vec::new();
    for (case, t) in rows {
        let ((f, f10, f90), (p, p10, p90)) = (t.floor, t.policy);
        let ratio = ratio(p, f);
        let (label, target) = (case.path.label(), case.path.target());
        if ratio > target {
            missed.push(case.name.clone());
        }
        out.push_str(&format!(
            "| {} | {label} | {:.1} | {f:.0} ({f10:.0}-{f90:.0}) | {p:.0} ({p10:.0}-{p90:.0}) | {ratio:.2} | ≤ {target} | {:.2} | {:.2} |\n",
            case.name, t.request_kib, t.answered, t.guest,
        ));
    }
    let fresh: Vec<_> = rows
        .iter()
        .map(|(case, t)| (*case, (t.fresh_floor, t.fresh_policy, case.path.target())))
        .collect();
    out.push_str(&fresh_table(
        &fresh,
        "floor µs (p10-p90) | restage-gate µs (p10-p90) | ratio | target",
        &mut missed,
        |&((f, f10, f90), (p, p10, p90), target)| {
            let ratio = ratio(p, f);
            let figures = format!(
                "{f:.0} ({f10:.0}-{f90:.0}) | {p:.0} ({p10:.0}-{p90:.0}) | {ratio:.2} | ≤ {target}"
            );
            (ratio, figures)
        },
    ));
    out.push_str(&verdict(&missed));
    out
}

/// The block `make bench-instructions` writes: per case, (floor, restage-gate) on one
/// long-lived instance, and the same on a fresh instance per request (`fresh`, in the same
/// order).
pub fn instructions_block(
    machine: &str,
    calls: usize,
    rows: &[(&Case, Count, Count)],
    fresh: &[(FreshCount, FreshCount)],
) -> String {
    let mut out = format!(
        "`make bench-instructions` on {machine}: instructions per call (host and guest, under \
         valgrind's callgrind, {calls} calls counted after the warm-up), first on one \
         long-lived instance (as `kwctl bench` keeps one): the whole path and the ratios \
         without building the payload and of the guest alone.\n\n\
         | case | path | floor instructions | restage-gate instructions | ratio | target | ratio without the payload | guest-only ratio |\n\
         |---|---|---|---|---|---|---|---|\n"
    );
    let mut parts = String::new();
    let mut missed = Vec::new();
    for (case, f, p) in rows {
        let (label, target) = (case.path.label(), case.path.target());
        let whole = ratio(p.whole as f64, f.whole as f64);
        if whole > target {
            missed.push(case.name.clone());
        }
        out.push_str(&format!(
            "| {} | {label} | {} | {} | {whole:.2} | ≤ {target} | {:.2} | {:.2} |\n",
            case.name,
            grouped(f.whole),
            grouped(p.whole),
            ratio(p.answered() as f64, f.answered() as f64),
            ratio(p.guest as f64, f.guest as f64),
        ));
        for (module, count) in [("floor", f), ("restage-gate", p)] {
            parts.push_str(&format!(
                "| {} | {module} | {} | {} | {} | {} |\n",
                case.name,
                grouped(count.payload),
                grouped(count.guest),
                grouped(count.answer),
                grouped(count.freeing().unwrap_or_default()),
            ));
        }
    }
    out.push_str(
        "\nEach part on its own, the same run: building the payload, the guest's call (with \
         the waPC host's part of it), the handling of its answer, and freeing what the call \
         built:\n\n\
         | case | module | payload | guest | answer | freeing |\n\
         |---|---|---|---|---|---|\n",
    );
    out.push_str(&parts);
    let fresh: Vec<_> = rows
        .iter()
        .zip(fresh)
        .map(|((case, ..), counts)| (*case, (*counts, case.path.target())))
        .collect();
    out.push_str(&fresh_table(
        &fresh,
        "floor instructions | restage-gate instructions | ratio | target | instantiating: floor | instantiating: restage-gate",
        &mut missed,
        |&((f, p), target)| {
            let whole = ratio(p.whole as f64, f.whole as f64);
            let figures = format!(
                "{} | {} | {whole:.2} | ≤ {target} | {} | {}",
                grouped(f.whole),
                grouped(p.whole),
                grouped(f.instance),
                grouped(p.instance),
            );
            (whole, figures)
        },
    ));
    out.push_str(&verdict(&missed));
    out
}

fn ratio(policy: f64, floor: f64) -> f64 {
    if floor > 0.0 {
        policy / floor
    } else {
        0.0
    }
}

fn verdict(missed: &[String]) -> String {
    if missed.is_empty() {
        "\nEvery case is within its target.\n".into()
    } else {
        format!("\nOver target: {}.\n", missed.join(", "))
    }
}

/// 1120878 → 1,120,878
pub fn grouped(n: u64) -> String {
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

/// The machine, as the blocks name it: logical CPUs, their model, memory.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name")?.split_once(':'))
        .map(|(_, m)| m.split_whitespace().collect::<Vec<_>>().join(" "));
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let gib = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map(|kib| (kib / (1024.0 * 1024.0)).round());
    let mut out = format!("{cpus} CPUs");
    if let Some(model) = model {
        out.push_str(&format!(" ({model})"));
    }
    if let Some(gib) = gib {
        out.push_str(&format!(", {gib} GiB"));
    }
    out
}

/// Writes `block` between the markers of `name` in the docs, and says where.
pub fn write(name: &str, block: &str) -> Result<(), String> {
    repository::write_generated(&repository::root(), DOC, name, block)?;
    println!("\nwritten to {DOC} (block `{name}`)");
    Ok(())
}

/// What a block says apart from its figures: its prose (the command, less the machine), each
/// table's header and the labels of each row (case, and path or module).
pub fn shape(block: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut header = false;
    for line in block.lines() {
        if let Some(command) = line.strip_prefix('`') {
            out.push(command.split(" on ").next().unwrap_or_default().to_string());
        } else if line.starts_with("|---") {
            out.push(line.to_string());
        } else if line.starts_with('|') && !header {
            let labels: Vec<&str> = line.split('|').skip(1).take(2).map(str::trim).collect();
            out.push(labels.join(" | "));
        } else if line.starts_with("Over target:") {
            out.push("Every case is within its target.".into());
        } else {
            out.push(line.to_string());
        }
        // A table's first row is its header: kept whole.
        header = line.is_empty();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use restage_gate_e2e::workloads::cases;

    /// The committed block `name` has the shape of `expected`, what `command` writes now.
    fn assert_current(name: &str, command: &str, expected: &str) {
        let committed = repository::generated(&repository::root(), DOC, name).expect("the block");
        assert!(
            shape(&committed) == shape(expected),
            "{DOC}'s `{name}` block is not what `{command}` writes now (other cases or columns): run `{command}`"
        );
    }

    #[test]
    fn the_wall_time_block_has_the_shape_make_bench_writes() {
        let cases = cases();
        let rows: Vec<_> = cases.iter().map(|c| (c, Timed::default())).collect();
        assert_current(WALL, "make bench", &wall_block("a machine", 301, &rows));
    }

    #[test]
    fn the_instructions_block_has_the_shape_make_bench_instructions_writes() {
        let cases = cases();
        let rows: Vec<_> = cases
            .iter()
            .map(|c| (c, Count::default(), Count::default()))
            .collect();
        let fresh = vec![Default::default(); rows.len()];
        let expected = instructions_block("a machine", 10, &rows, &fresh);
        assert_current(INSTRUCTIONS, "make bench-instructions", &expected);
    }

    #[test]
    fn a_block_with_another_case_or_column_has_another_shape() {
        let cases = cases();
        let rows: Vec<_> = cases.iter().map(|c| (c, Timed::default())).collect();
        let block = wall_block("2 CPUs", 301, &rows);
        let measured = block
            .replace("| 0.0 |", "| 15.0 |")
            .replace(" 0 (0-0) ", " 197 (191-221) ");
        assert_eq!(shape(&measured), shape(&block), "figures are not shape");
        let fewer = wall_block("2 CPUs", 301, &rows[1..]);
        assert_ne!(shape(&fewer), shape(&block));
        let renamed = block.replace("| guest-only ratio |", "| guest ratio |");
        assert_ne!(shape(&renamed), shape(&block));
    }

    #[test]
    fn numbers_are_grouped_by_thousands() {
        assert_eq!(grouped(1_120_878), "1,120,878");
        assert_eq!(grouped(999), "999");
    }
}
