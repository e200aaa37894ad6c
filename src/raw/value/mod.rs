//! A pod template as the reader holds it, [`Node`]: read in one pass as deep as its
//! [`Shape`](crate::Shape) says (`de.rs`), looked into and compared as a [`Tree`](crate::Tree)
//! (`tree.rs`), written back as the same JSON (`ser.rs`). Its strings are borrowed from the
//! request; every member the shape does not read, at every level, stays the request's raw
//! JSON, compared as text and built into a tree only where its text differs. The elements of a
//! list read when asked for are kept as text until first looked into: a bind inserts a few
//! elements, and the ones both templates share need never be read.

mod de;
mod node;
mod ser;
mod tree;

pub(crate) use de::template_seed;
pub use de::Key;
pub use node::Node;

#[cfg(test)]
mod tests;
