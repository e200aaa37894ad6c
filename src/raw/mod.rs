//! Everything that knows JSON text: reading the payload in one pass (the members asked for as
//! values, pod templates as deep as the rules' shapes say, the rest kept as the request's
//! text), comparing text, writing the answer, and the module's allocator.
//!
//! The rules above hand down what to read ([`ReadPlan`]) and get back a typed view ([`Tree`],
//! `serde_json::Value`); they hand back an [`Answer`] and the edited values, which this layer
//! writes around the request's own text. Nothing here knows a rule of the policy.

// The global allocator on the module's own target only; tested everywhere.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
mod arena;
mod object;
mod request;
mod text;
mod tree;
mod writer;

use serde_json::Value;

pub use arena::evaluation;
pub(crate) use request::{read, Request};
pub(crate) use writer::{write_answer, Answer};

/// What the reader makes values of; every other member stays the request's text and is
/// written back as it is. Paths are object keys from the object's top.
#[derive(Debug, Default)]
pub(crate) struct ReadPlan {
    /// Members read as JSON values.
    pub values: Vec<&'static [&'static str]>,
    /// Maps read only at the keys starting with one of the prefixes.
    pub maps: Vec<(&'static [&'static str], Vec<&'static str>)>,
    /// Pod templates, each read as deep as its shape says.
    pub templates: Vec<(&'static [&'static str], &'static Shape)>,
    /// Members of the stored object's `status`, each with the members read of the objects
    /// listed in it (none: the whole member).
    pub status: Vec<(&'static str, &'static [&'static str])>,
}

/// How deep a pod template is read, declared by the rules: of an object at this place, which
/// members are read and how (`members`, then `others` for every other key); of a list here,
/// how its elements are read. A member a shape does not read is kept as text: found, and
/// compared as JSON, but never a string, list or object to the rules.
#[derive(Debug)]
pub struct Shape {
    pub members: &'static [(&'static str, Reach)],
    pub others: Reach,
    pub elements: Reach,
}

/// How a value is read.
#[derive(Debug, Clone, Copy)]
pub enum Reach {
    /// Kept as the request's text; compared as JSON, never looked into.
    Text,
    /// Read whole, as a tree holds it.
    Whole,
    /// Read as the shape says.
    Shaped(&'static Shape),
    /// Kept as text, and read as the shape says when first looked into: for the elements of
    /// a list most of which two templates share.
    WhenAsked(&'static Shape),
}

impl Shape {
    /// Everything read.
    pub const WHOLE: Shape = Shape {
        members: &[],
        others: Reach::Whole,
        elements: Reach::Whole,
    };

    /// An object whose `members` are read and whose other members stay text. Anything else
    /// at its place (a list, say) is read whole.
    pub const fn object(members: &'static [(&'static str, Reach)]) -> Shape {
        Shape {
            members,
            others: Reach::Text,
            elements: Reach::Whole,
        }
    }

    /// A list whose elements are read as `elements` says. Anything else at its place (an
    /// object, say) is read whole.
    pub const fn list(elements: Reach) -> Shape {
        Shape {
            members: &[],
            others: Reach::Whole,
            elements,
        }
    }
}

/// A JSON tree as the rules read it: a `serde_json::Value`, or a pod template as the reader
/// holds it. Equality is equality as JSON.
pub trait Tree: PartialEq + Sized {
    /// A member of an object.
    fn get(&self, key: &str) -> Option<&Self>;
    fn as_str(&self) -> Option<&str>;
    fn as_list(&self) -> Option<&[Self]>;
    fn is_object(&self) -> bool;
    fn is_null(&self) -> bool;
    /// An object's members in key order, each key once; nothing for anything else.
    fn members(&self) -> impl Iterator<Item = (&str, &Self)>;
    /// `false` only where no string in this JSON (key or value) can be `text`: a shortcut
    /// past reading what cannot match.
    fn may_contain(&self, text: &str) -> bool {
        let _ = text;
        true
    }
    /// Equal, told without reading either side; `false` means "not known to be", not
    /// "different". Cheap enough to run over every element of a list.
    fn identical(&self, other: &Self) -> bool;
}

impl Tree for Value {
    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object()?.get(key)
    }

    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }

    fn as_list(&self) -> Option<&[Self]> {
        self.as_array().map(Vec::as_slice)
    }

    fn is_object(&self) -> bool {
        Value::is_object(self)
    }

    fn is_null(&self) -> bool {
        Value::is_null(self)
    }

    fn members(&self) -> impl Iterator<Item = (&str, &Self)> {
        self.as_object()
            .into_iter()
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }

    fn identical(&self, other: &Self) -> bool {
        self == other
    }
}
pub use tree::Node;

/// One object from its JSON text, read as `plan` says (its `status` too when `status` is set).
#[cfg(any(test, feature = "internals"))]
pub(crate) fn read_object<'a>(
    text: &'a str,
    plan: &ReadPlan,
    status: bool,
) -> Option<object::Object<'a>> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let levels = object::Levels::new(plan);
    let object = object::Object::read(&mut deserializer, &levels, status).ok()?;
    deserializer.end().ok()?;
    Some(object.read_from(text))
}
