//! Host-side tooling for restage-gate: load the compiled module in the runtime Kubewarden uses
//! (waPC over wasmtime, with WASI) and model what a cluster does with its answers. Reading the
//! answers the way kwctl does is `restage-gate-evaluation`; fixtures, the projector model and
//! request builders are in `restage-gate-testkit`.

pub mod bundled;
pub mod callgrind;
pub mod cluster;
pub mod host;
pub mod manifests;
pub mod metadata;
pub mod oci;
pub mod programs;
pub mod questions;
pub mod repository;
pub mod signing;
pub mod versions;
pub mod workflows;
pub mod workloads;
