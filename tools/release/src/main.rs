//! `restage-gate-release`: the release path without kwctl, producing what kwctl produces. Its
//! commands and options: [`restage_gate_release::cli`] (tools/release/src/cli.rs).

fn main() -> std::process::ExitCode {
    restage_gate_release::cli::main()
}
