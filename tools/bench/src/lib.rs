//! What the benchmarks share: where the floor module is, running a benchmark under callgrind,
//! and writing their tables into the docs.

pub mod callgrind;
pub mod figures;

use std::path::PathBuf;

/// Where the parse-only floor module is: `$RESTAGE_GATE_FLOOR_WASM`, or where `make floor`
/// builds it.
pub fn floor_path() -> PathBuf {
    restage_gate_e2e::host::module_path(
        "RESTAGE_GATE_FLOOR_WASM",
        "target/wasm32-wasip1/release/restage_gate_floor.wasm",
    )
}
