//! What kwctl and policy-server do around a Kubewarden waPC policy, independent of the
//! WebAssembly runtime that runs it, so that every runner of restage-gate (the wasmtime host of
//! the test suites, the demo's interpreter, kwctl itself) frames and prints decisions the same
//! way.

pub mod admission;
pub mod evaluator;
pub mod guest;
pub mod summary;
