//! `restage-gate-release` (tools/release) under another name, for the tests of this crate.

fn main() -> std::process::ExitCode {
    restage_gate_release::cli::main()
}
