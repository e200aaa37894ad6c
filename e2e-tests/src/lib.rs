//! The e2e suites' harness: the compiled module in the runtime Kubewarden uses (waPC over
//! wasmtime, with WASI), a model of what a cluster does with its answers, the example requests
//! and the settings form against the module. Reading the answers the way kwctl does is
//! `restage-gate-evaluation`; fixtures, the projector model and request builders are in
//! `restage-gate-testkit`; the project's own files are read through `restage-gate-release`.

pub mod bundled;
pub mod cluster;
pub mod docs;
pub mod host;
pub mod programs;
pub mod questions;
pub mod registry;
pub mod workloads;
