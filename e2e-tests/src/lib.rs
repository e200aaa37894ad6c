//! Host-side tooling for restage-gate: load the compiled module in the runtime Kubewarden uses
//! (waPC over wasmtime, with WASI), build admission requests, and read the responses the way
//! kwctl and policy-server turn them into AdmissionResponses.

pub mod admission;
pub mod cluster;
pub mod demo;
pub mod host;
pub mod korifi;
pub mod metadata;
pub mod oci;
pub mod projector;
pub mod signing;
pub mod versions;
pub mod workloads;
