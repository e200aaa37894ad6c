//! A [`Node`] read from JSON text as deep as a [`Shape`] says, strings and keys borrowed from
//! the text where it has them unescaped.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::Number;

use super::node::Node;
use crate::plan::{Reach, Shape};
use crate::text::as_in_a_tree;

/// Reads a pod template where a request has it, as deep as `shape` says.
pub(crate) fn template_seed<'a>(shape: &'static Shape) -> Read<'a> {
    Read::at(shape)
}

impl<'a> Node<'a> {
    /// A pod template from JSON text, read as deep as `shape` says; `None` when it is not JSON
    /// (or a number is out of range where the template is read; a value read when asked for
    /// that does not read as a tree stays its text, compared as such).
    pub fn template(text: &'a str, shape: &'static Shape) -> Option<Node<'a>> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let node = template_seed(shape).deserialize(&mut deserializer).ok()?;
        deserializer.end().ok()?;
        Some(node)
    }

    /// The text of an element read when asked for, read as its shape says; `None` when it
    /// does not read as a tree.
    pub(crate) fn shaped(raw: &'a RawValue, shape: &'static Shape) -> Option<Node<'a>> {
        let mut deserializer = serde_json::Deserializer::from_str(raw.get());
        Read::at(shape).deserialize(&mut deserializer).ok()
    }
}

/// Reads a value as deep as a shape says, borrowing from text that lives for `'a`.
pub(crate) struct Read<'a>(&'static Shape, PhantomData<Node<'a>>);

impl Read<'_> {
    fn at(shape: &'static Shape) -> Self {
        Read(shape, PhantomData)
    }
}

/// Read to the end.
static WHOLE: Shape = Shape::WHOLE;

/// Reads a value as a reach says.
struct Reached<'a>(Reach, PhantomData<Node<'a>>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Reached<'a> {
    type Value = Node<'a>;

    // Runs for every member and element read: inlined, the choice costs a branch, not a call.
    #[inline(always)]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'a>, D::Error> {
        match self.0 {
            Reach::Text => Ok(Node::Raw(<&'a RawValue>::deserialize(deserializer)?)),
            Reach::WhenAsked(shape) => {
                let raw = <&'a RawValue>::deserialize(deserializer)?;
                Ok(Node::Lazy(raw, shape, OnceCell::new()))
            }
            Reach::Whole => Read::at(&WHOLE).deserialize(deserializer),
            Reach::Shaped(shape) => Read::at(shape).deserialize(deserializer),
        }
    }
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Read<'a> {
    type Value = Node<'a>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node<'a>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Read<'a> {
    type Value = Node<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'a>, A::Error> {
        // Room for a typical object's members up front: a block costs the module's
        // allocator next to nothing, while a list that grows as its members take blocks of
        // their own is copied at each doubling (`arena.rs`).
        let mut members = Vec::with_capacity(16);
        while let Some(key) = map.next_key_seed(Key::seed())? {
            let node = map.next_value_seed(Reached(self.0.member(&key), PhantomData))?;
            members.push((key, node));
        }
        let repeated = as_in_a_tree(&mut members);
        Ok(Node::Object(members, repeated))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'a>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Reached(self.0.elements, PhantomData))? {
            items.push(item);
        }
        Ok(Node::List(items))
    }

    fn visit_unit<E>(self) -> Result<Node<'a>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Node<'a>, E> {
        Ok(Node::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Node<'a>, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Node<'a>, E> {
        Ok(Node::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Node<'a>, E> {
        // As a tree holds it: JSON text never reads as a non-finite number.
        Ok(Number::from_f64(v).map_or(Node::Null, Node::Number))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Node<'a>, E> {
        Ok(Node::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Node<'a>, E> {
        Ok(Node::Str(Cow::Owned(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Node<'a>, E> {
        Ok(Node::Str(Cow::Owned(v)))
    }
}

/// An object key, borrowed from the text unless it has escapes.
pub struct Key<'a>(PhantomData<Cow<'a, str>>);

impl Key<'_> {
    pub fn seed() -> Self {
        Key(PhantomData)
    }
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Key<'a> {
    type Value = Cow<'a, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Key<'a> {
    type Value = Cow<'a, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_string()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}
