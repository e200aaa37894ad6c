//! Test tooling for restage-gate, in one place: the fixtures, the servicebinding.io projector
//! model, the writes Korifi and kubectl make, JSON edits, admission requests for any kind,
//! workloads as the policy leaves them when it holds them, and one descriptor per kind
//! (`descriptor`, each kind's in `kinds/`, found through `lookup`). Every marker key comes from
//! `restage_gate::markers`.
//!
//! Used by the e2e crate, the policy's black-box tests (`e2e-tests/validate`), the release
//! tool's checks and the fuzz targets, which all link the one policy crate this one does: a kind
//! is passed as the policy's own `&dyn Workload`.

pub mod admission;
pub mod descriptor;
pub mod edit;
pub mod fixtures;
pub mod hold;
mod kinds;
pub mod korifi;
pub mod kubectl;
pub mod lookalike;
pub mod lookup;
pub mod pod;
pub mod projector;
pub mod secret_volume;
pub mod simulation;
