//! restage-gate's JSON layer: everything that knows JSON text. It reads the payload in one
//! pass (the members asked for as values, pod templates as deep as the rules' shapes say, the
//! rest kept as the request's text), compares text, and writes the answer.
//!
//! The rules above hand down what to read ([`ReadPlan`], [`Shape`]) and get back a typed view
//! ([`Tree`]: `serde_json::Value`, and [`Node`] for pod templates); they hand back an
//! [`Answer`] and the edited values, which this layer writes around the request's own text.
//! Nothing here knows a rule of the policy: this crate cannot import them.
//!
//! Where each part is:
//! - `plan.rs`, `tree.rs`: what the rules hand down, and the view they read through;
//! - `payload.rs`: the ValidationRequest read in one pass; `de.rs`: its objects read as far as
//!   the plan says, into `object.rs`'s values and kept text;
//! - `value/`: a pod template read to its shape, looked into and compared as a tree; `read.rs`:
//!   where a value sits in the request's text;
//! - `writer.rs`: the answer, with the edited object written around the request's text;
//! - `text.rs`: text compared eight bytes at a time.

mod de;
mod object;
mod payload;
mod plan;
mod read;
mod text;
mod tree;
mod value;
mod writer;

pub use de::read_object;
pub use object::Object;
pub use payload::{read, Request};
pub use plan::{Reach, ReadPlan, Shape};
pub use tree::Tree;
pub use value::Node;
pub use writer::{write_answer, Answer};
