//! The node a pod template is read into, and the same JSON as a `serde_json::Value`.
//!
//! Any JSON reads: a value of another shape than the one declared at its place is read whole,
//! as a tree would hold it. How a member is read depends only on where it sits, so two
//! templates hold the same member in the same form wherever the rules compare them.

use std::borrow::Cow;
use std::cell::OnceCell;

use serde_json::value::RawValue;
use serde_json::{Number, Value};

use crate::plan::Shape;

/// A JSON value whose strings are borrowed where the request has them unescaped, and whose
/// unread members are raw.
#[derive(Debug, Clone)]
pub enum Node<'a> {
    /// A member the shape does not read, as the request has it.
    Raw(&'a RawValue),
    /// A value read when first asked for (`Reach::WhenAsked`), as the request has it, and as
    /// its shape reads it once asked; `None` if it does not read (a number out of range where
    /// it is read).
    Lazy(
        &'a RawValue,
        &'static Shape,
        OnceCell<Option<Box<Node<'a>>>>,
    ),
    Null,
    Bool(bool),
    Number(Number),
    Str(Cow<'a, str>),
    List(Vec<Node<'a>>),
    /// Members sorted by key, a repeated key keeping its last value, as in a `Value`; and
    /// whether a key repeated (its text then holds more than it does).
    Object(Vec<(Cow<'a, str>, Node<'a>)>, bool),
}

impl Node<'_> {
    /// Equal as JSON, through trees: for text no node holds as a tree.
    pub(crate) fn json_eq(&self, other: &Self) -> bool {
        match (self.to_value(), other.to_value()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// The same JSON as a tree; `None` for a raw member a tree cannot hold (nested deeper than
    /// serde_json's limit, a number out of range, an unpaired surrogate escape).
    pub(crate) fn to_value(&self) -> Option<Value> {
        Some(match self {
            Node::Raw(raw) | Node::Lazy(raw, ..) => serde_json::from_str(raw.get()).ok()?,
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Number(n) => Value::Number(n.clone()),
            Node::Str(s) => Value::String(s.to_string()),
            Node::List(items) => {
                Value::Array(items.iter().map(Node::to_value).collect::<Option<_>>()?)
            }
            Node::Object(members, _) => Value::Object(
                members
                    .iter()
                    .map(|(k, v)| Some((k.to_string(), v.to_value()?)))
                    .collect::<Option<_>>()?,
            ),
        })
    }
}
