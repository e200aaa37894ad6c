//! Test tooling for restage-gate, in one place: the fixtures, the servicebinding.io projector
//! model, the writes Korifi and kubectl make, JSON edits, admission requests for any kind,
//! workloads as the policy leaves them when it holds them, and one descriptor per kind
//! (`kinds`). Every marker key comes from
//! `restage_gate::markers`.
//!
//! Used by the e2e crate and by the policy crate's own tests. The API takes and returns
//! `serde_json::Value`s and strings only: the policy crate's tests compile the policy a second
//! time, and the two compilations must never meet in a type.

pub mod admission;
pub mod edit;
pub mod fixtures;
pub mod hold;
pub mod kinds;
pub mod korifi;
pub mod kubectl;
pub mod lookalike;
pub mod pod;
pub mod projector;
pub mod secret_volume;
