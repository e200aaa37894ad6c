//! Host-side tooling for restage-gate: load the compiled module in the runtime Kubewarden uses
//! (waPC over wasmtime, with WASI), read the responses the way kwctl and policy-server turn
//! them into AdmissionResponses, and model what a cluster does with them. Fixtures, the
//! projector model and request builders are in `restage-gate-testkit`.

pub mod admission;
pub mod cluster;
pub mod demo;
pub mod host;
pub mod manifests;
pub mod metadata;
pub mod oci;
pub mod questions;
pub mod repository;
pub mod versions;
pub mod workflows;
pub mod workloads;
