//! Host-side tooling for restage-gate: load the compiled module in the runtime Kubewarden uses
//! (waPC over wasmtime, with WASI), build admission requests, and model the cluster around the
//! policy. Reading the answers the way kwctl does is `restage-gate-evaluation`.

pub mod admission;
pub mod cluster;
pub mod demo;
pub mod host;
pub mod korifi;
pub mod metadata;
pub mod oci;
pub mod programs;
pub mod projector;
pub mod versions;
pub mod workloads;
