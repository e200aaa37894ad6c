//! The release path without kwctl, producing what kwctl produces: the module annotated with its
//! metadata, pushed and pulled as an OCI artifact, signed and verified as cosign and kwctl do,
//! and the Artifact Hub package. Its tests check that the files that ship agree with each
//! other: versions, the install manifests, the settings form, the workflows.

pub mod cli;
pub mod kind_modules;
mod kind_names;
pub mod kinds;
pub mod manifests;
pub mod metadata;
pub mod oci;
pub mod questions;
pub mod repository;
#[cfg(feature = "signing")]
pub mod signing;
pub mod versions;
#[cfg(test)]
mod window_release;
pub mod workflows;
