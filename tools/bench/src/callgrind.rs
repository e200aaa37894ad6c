//! The instruction counters count instructions by running themselves again under valgrind's
//! callgrind (`<program> --calls <module> <case> <calls>` makes only the calls to count, on one
//! long-lived instance; `--fresh-calls` the same, each on a fresh instance), and
//! `make profile-functions` names what it counted by wasmtime's perf map.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

/// A finished callgrind run: its process id (a perf map is named after it) and valgrind's log.
pub struct Run {
    pub pid: u32,
    pub log: String,
}

/// Runs this program under callgrind, collecting only inside functions whose name contains
/// `collect`, writing the profile to `profile`; `options` go to callgrind as they are. The
/// program makes the calls `flag` names (`--calls`, `--fresh-calls`).
pub fn run_self(
    collect: &str,
    options: &[&str],
    profile: &Path,
    (flag, module, case, calls): (&str, &Path, usize, u64),
) -> Result<Run, String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--toggle-collect=*{collect}*"))
        .args(options)
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .arg(&me)
        .arg(flag)
        .arg(module)
        .args([case.to_string(), calls.to_string()])
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("valgrind: {e} (apt-get install valgrind)"))?;
    // valgrind runs the program in its own process.
    let pid = child.id();
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!("valgrind failed on case {case}:\n{log}"));
    }
    Ok(Run { pid, log })
}

/// A perf map's machine-code ranges by start address (`<start> <length> <name>`, hex), with
/// the function each holds.
pub fn perf_map(text: &str) -> BTreeMap<u64, (u64, String)> {
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ' ');
            let (start, len, name) = (hex(parts.next()?)?, hex(parts.next()?)?, parts.next()?);
            Some((start, (start + len, name.to_string())))
        })
        .collect()
}

/// What `by_function` counts at addresses no function of the map holds.
pub const OUTSIDE: &str = "(outside the module: the waPC host, wasmtime)";

/// Instructions by function from a callgrind profile written with `--dump-instr=yes
/// --compress-pos=no`: each cost line is `<address> <line> <count>`; the line after a
/// `calls=` line is the call's inclusive cost, left out, so each count is a function's own.
pub fn by_function(profile: &str, map: &BTreeMap<u64, (u64, String)>) -> BTreeMap<String, u64> {
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
            _ => OUTSIDE,
        };
        *counts.entry(name.to_string()).or_insert(0) += count;
    }
    counts
}

/// A v0-demangled name without its crate disambiguators (`serde_json[c2a6b7e5c4922e90]::de`
/// reads `serde_json::de`): v0 names a generic function's type arguments, which is what tells
/// one `deserialize_any` from another, and the hashes only lengthen the line. A disambiguator
/// follows a crate's name and is at least 8 lowercase hex digits; other brackets (`&[f32]`,
/// wasmtime's `wasm[0]::function[12]`) stay.
pub fn short_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(open) = rest.find('[') {
        let (before, from) = rest.split_at(open);
        out.push_str(before);
        let after_crate = out
            .bytes()
            .next_back()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_');
        let hash_len = from[1..].find(']').filter(|&len| {
            len >= 8
                && from[1..=len]
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        match hash_len {
            Some(len) if after_crate => rest = &from[len + 2..],
            _ => {
                out.push('[');
                rest = &from[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_address_counts_for_the_function_whose_code_holds_it_and_calls_do_not() {
        let map = perf_map("0x1000 10 restage_gate::a\n0x1010 8 serde_json::b c\nnot a line\n");
        let profile = "\
fn=(1) 0x1000
0x1000 12 5
0x100f 12 2
calls=1 0x1010 0
0x1004 13 400
0x1010 20 7
0x1018 20 3
fl=(2) src/x.rs
";
        let counts = by_function(profile, &map);
        let want = [("restage_gate::a", 7), ("serde_json::b c", 7), (OUTSIDE, 3)];
        assert_eq!(
            counts,
            want.iter().map(|(n, c)| (n.to_string(), *c)).collect()
        );
    }

    #[test]
    fn crate_disambiguators_are_left_out_of_a_name_and_other_brackets_kept() {
        let name = "<&mut serde_json[c2a6b7e5c4922e90]::de::Deserializer<\
                    serde_json[c2a6b7e5c4922e90]::read::StrRead> as \
                    serde_core[aabb7bbbcc0fde3d]::de::Deserializer>::deserialize_any::<[u8; 4]>";
        assert_eq!(
            short_name(name),
            "<&mut serde_json::de::Deserializer<serde_json::read::StrRead> as \
             serde_core::de::Deserializer>::deserialize_any::<[u8; 4]>"
        );
        assert_eq!(short_name("core[d3fa1c0ffee]"), "core");
        for kept in [
            "a[] b[x1] c[",
            "<&[f32] as x>::y",
            "<&[deadbeef00] as x>::y",
            "wasm[0]::function[12]",
            "crate[C2A6B7E5C4922E90]::f",
            "[[abcdef01]]",
        ] {
            assert_eq!(short_name(kept), kept);
        }
    }
}
