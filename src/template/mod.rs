//! The pod template: what a binding projection is, and how two templates compare.

pub mod artefacts;
pub mod classify;
pub(crate) mod compare;
#[cfg(test)]
mod fixtures;
