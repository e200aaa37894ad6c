//! The pod template: what a binding projection is, and how two templates compare.

pub mod artefacts;
pub mod classify;
#[cfg(test)]
mod fixtures;
pub(crate) mod insertion;
