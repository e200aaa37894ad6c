//! A pod template read in one pass as deep as its [`Shape`] says: the members it reads become
//! nodes, their strings borrowed from the request; every other member, at every level, stays
//! the request's raw JSON, compared as text and built into a tree only where its text differs.
//! The elements of a list read when asked for are kept as text until first looked into: a bind
//! inserts a few elements, and the ones both templates share need never be read. Written back,
//! a template is the same JSON.
//!
//! Any JSON reads: a value of another shape than the one declared at its place is read whole,
//! as a tree would hold it. How a member is read depends only on where it sits, so two
//! templates hold the same member in the same form wherever the rules compare them.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::value::RawValue;
use serde_json::{Number, Value};

use super::text::{as_in_a_tree, same_text};
use super::{Reach, Shape, Tree};

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

    /// A lazily read element, read; anything else, or an element that does not read as a
    /// tree, as it is.
    fn read(&self) -> &Self {
        match self {
            Node::Lazy(raw, shape, read) => read
                .get_or_init(|| {
                    let mut deserializer = serde_json::Deserializer::from_str(raw.get());
                    Read::at(shape)
                        .deserialize(&mut deserializer)
                        .ok()
                        .map(Box::new)
                })
                .as_deref()
                .unwrap_or(self),
            _ => self,
        }
    }

    /// Equal as JSON, through trees: for text no node holds as a tree.
    fn json_eq(&self, other: &Self) -> bool {
        match (self.to_value(), other.to_value()) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        }
    }

    /// The same JSON as a tree; `None` for a raw member a tree cannot hold (nested deeper than
    /// serde_json's limit, a number out of range, an unpaired surrogate escape).
    fn to_value(&self) -> Option<Value> {
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

    /// This node's own text, when `source` is the text it was read from and the text holds
    /// what the node does: no key repeats in an object read, and where the text starts can be
    /// told from the pieces of `source` the node borrows. Of an object, the first member in
    /// the text is the key with the smallest address, the last the one with the largest; of a
    /// list, its first and last elements; each level down to the first and the last piece.
    /// Where the last piece is not borrowed (a number, an escaped string, an empty list), the
    /// text is read on from the start to find the end. `None` when the start cannot be told:
    /// an escaped key, an empty object, a list whose first element is not borrowed.
    pub(crate) fn text_in(&self, source: &'a str) -> Option<&'a str> {
        if self.repeats() {
            return None;
        }
        source.get(self.span(source)?)
    }

    /// Whether a key repeats in an object read in this node (an element read when asked for
    /// is text, and copied as such).
    fn repeats(&self) -> bool {
        match self {
            Node::Object(members, repeated) => {
                *repeated || members.iter().any(|(_, v)| v.repeats())
            }
            Node::List(items) => items.iter().any(Node::repeats),
            _ => false,
        }
    }

    fn span(&self, text: &str) -> Option<Range<usize>> {
        let source = text.as_bytes();
        match self {
            Node::Raw(raw) | Node::Lazy(raw, ..) => within(source, raw.get()),
            Node::Str(Cow::Borrowed(piece)) => {
                let inner = within(source, piece)?;
                let quoted = inner.start.checked_sub(1)?..inner.end + 1;
                (source.get(quoted.start) == Some(&b'"') && source.get(inner.end) == Some(&b'"'))
                    .then_some(quoted)
            }
            Node::List(items) => {
                let start = opened(source, items.first()?.span(text)?.start, b'[')?;
                let end = match items.last()?.span(text) {
                    Some(last) => closed(source, last.end, b']')?,
                    None => value_end(text, start)?,
                };
                Some(start..end)
            }
            Node::Object(members, _) => {
                let mut keys = members.iter().map(|(key, value)| match key {
                    Cow::Borrowed(key) => Some((within(source, key)?.start, value)),
                    Cow::Owned(_) => None,
                });
                let first = keys.next()??;
                let (mut start, mut last) = (first.0, first);
                for key in keys {
                    let key = key?;
                    start = start.min(key.0);
                    last = if key.0 > last.0 { key } else { last };
                }
                let quote = start.checked_sub(1).filter(|&q| source[q] == b'"')?;
                let start = opened(source, quote, b'{')?;
                let end = match last.1.span(text) {
                    Some(last) => closed(source, last.end, b'}')?,
                    None => value_end(text, start)?,
                };
                Some(start..end)
            }
            _ => None,
        }
    }
}

/// The end of the JSON value that starts at `start`, read through: a value whose last piece
/// is not borrowed from the text, so that only reading tells where it ends.
fn value_end(text: &str, start: usize) -> Option<usize> {
    let rest = text.get(start..)?;
    let value = serde_json::Deserializer::from_str(rest)
        .into_iter::<&RawValue>()
        .next()?
        .ok()?;
    let read = within(text.as_bytes(), value.get())?;
    (read.start == start).then_some(read.end)
}

/// Where `part` sits in `source`, if it is a piece of it.
fn within(source: &[u8], part: &str) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= source.len()).then_some(start..end)
}

/// The position of `open` just before `at`, past whitespace.
fn opened(source: &[u8], at: usize, open: u8) -> Option<usize> {
    let i = source
        .get(..at)?
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())?;
    (source[i] == open).then_some(i)
}

/// The position after `close` from `at` on, past whitespace.
fn closed(source: &[u8], at: usize, close: u8) -> Option<usize> {
    let i = at
        + source
            .get(at..)?
            .iter()
            .position(|b| !b.is_ascii_whitespace())?;
    (source[i] == close).then_some(i + 1)
}

impl PartialEq for Node<'_> {
    fn eq(&self, other: &Self) -> bool {
        use Node::*;
        match (self, other) {
            // The API server writes both templates the same way: equal text settles almost
            // every raw member, and different text is compared as trees. (A raw member meets
            // a read one only if a caller compares members from different places.)
            (Raw(a), Raw(b)) | (Lazy(a, ..), Lazy(b, ..)) if same_text(a.get(), b.get()) => true,
            (Lazy(..), _) | (_, Lazy(..)) => match (self.read(), other.read()) {
                // Either did not read as a tree: compared as JSON, as a raw member is.
                (Lazy(..), _) | (_, Lazy(..)) => self.json_eq(other),
                (a, b) => a == b,
            },
            (Raw(_), _) | (_, Raw(_)) => self.json_eq(other),
            (Null, Null) => true,
            (Bool(a), Bool(b)) => a == b,
            (Number(a), Number(b)) => a == b,
            (Str(a), Str(b)) => same_text(a, b),
            (List(a), List(b)) => a == b,
            (Object(a, _), Object(b, _)) => {
                a.len() == b.len()
                    && a.iter()
                        .zip(b)
                        .all(|((k, x), (l, y))| same_text(k, l) && x == y)
            }
            _ => false,
        }
    }
}

impl Tree for Node<'_> {
    fn get(&self, key: &str) -> Option<&Self> {
        match self.read() {
            // Keys are unique: the first equal one is the member. A template's objects are
            // small, and equality tests lengths before bytes (an ordered search compares bytes).
            Node::Object(members, _) => members
                .iter()
                .find(|(k, _)| same_text(k, key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self.read() {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_list(&self) -> Option<&[Self]> {
        match self.read() {
            Node::List(items) => Some(items),
            _ => None,
        }
    }

    fn is_object(&self) -> bool {
        matches!(self.read(), Node::Object(..))
    }

    fn is_null(&self) -> bool {
        matches!(self.read(), Node::Null)
    }

    /// An element not yet read is looked at as text: without an escape, every string in it
    /// is there as it reads.
    fn may_contain(&self, text: &str) -> bool {
        match self {
            Node::Lazy(raw, _, read) if read.get().is_none() => {
                has_or_escape(raw.get().as_bytes(), text.as_bytes())
            }
            _ => true,
        }
    }

    /// Equal as JSON text, without reading: a lazily read element against another one.
    fn identical(&self, other: &Self) -> bool {
        match (self, other) {
            (Node::Lazy(a, ..), Node::Lazy(b, ..)) => same_text(a.get(), b.get()),
            _ => false,
        }
    }

    fn members(&self) -> impl Iterator<Item = (&str, &Self)> {
        let members = match self.read() {
            Node::Object(members, _) => members.as_slice(),
            _ => &[],
        };
        members.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Raw(raw) | Node::Lazy(raw, ..) => raw.serialize(serializer),
            Node::Null => serializer.serialize_unit(),
            Node::Bool(b) => serializer.serialize_bool(*b),
            Node::Number(n) => n.serialize(serializer),
            Node::Str(s) => serializer.serialize_str(s),
            Node::List(items) => {
                let mut seq = serializer.serialize_seq(None)?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Node::Object(members, _) => {
                let mut map = serializer.serialize_map(None)?;
                for (k, v) in members {
                    map.serialize_entry(k.as_ref(), v)?;
                }
                map.end()
            }
        }
    }
}

/// Whether `needle` occurs in `hay`, or `hay` has an escape (`\`), which may spell it.
fn has_or_escape(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memchr(b'\\', hay).is_some() || memchr::memmem::find(hay, needle).is_some()
}

impl Shape {
    /// How member `key` of an object here is read.
    fn member(&self, key: &str) -> Reach {
        // `same_text`, not `==`: the module's `==` on text compares byte by byte.
        self.members
            .iter()
            .find(|(name, _)| same_text(key, name))
            .map_or(self.others, |&(_, reach)| reach)
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
pub(crate) struct Key<'a>(PhantomData<Cow<'a, str>>);

impl Key<'_> {
    pub(crate) fn seed() -> Self {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use Reach::{Shaped, WhenAsked, Whole};

    // A shape for the reader's own tests, laid out like a pod template; what the rules read of
    // a template is theirs to declare and test. Every list read when asked for has elements of
    // one shape here.
    static TEMPLATE: Shape =
        Shape::object(&[("metadata", Shaped(&METADATA)), ("spec", Shaped(&SPEC))]);
    static METADATA: Shape = Shape::object(&[("annotations", Whole)]);
    static SPEC: Shape = Shape::object(&[
        ("volumes", Shaped(&WHEN_ASKED)),
        ("containers", Shaped(&CONTAINERS)),
        ("initContainers", Shaped(&CONTAINERS)),
    ]);
    static CONTAINERS: Shape = Shape::list(Shaped(&CONTAINER));
    static CONTAINER: Shape = Shape::object(&[
        ("env", Shaped(&WHEN_ASKED)),
        ("volumeMounts", Shaped(&WHEN_ASKED)),
    ]);
    static WHEN_ASKED: Shape = Shape::list(WhenAsked(&ELEMENT));
    static ELEMENT: Shape = Shape::object(&[
        ("name", Whole),
        ("value", Whole),
        ("mountPath", Whole),
        ("projected", Shaped(&PROJECTED)),
        ("valueFrom", Shaped(&VALUE_FROM)),
    ]);
    static PROJECTED: Shape = Shape::object(&[("sources", Shaped(&SOURCES))]);
    static SOURCES: Shape = Shape::list(Shaped(&SOURCE));
    static SOURCE: Shape = Shape::object(&[("secret", Shaped(&NAMED))]);
    static VALUE_FROM: Shape = Shape::object(&[
        ("secretKeyRef", Shaped(&NAMED)),
        ("fieldRef", Shaped(&FIELD_REF)),
    ]);
    static NAMED: Shape = Shape::object(&[("name", Whole)]);
    static FIELD_REF: Shape = Shape::object(&[("fieldPath", Whole)]);

    fn read_text(text: &str) -> Option<Node<'_>> {
        Node::template(text, &TEMPLATE)
    }

    fn at<'t, 'a>(node: &'t Node<'a>, path: &[&str]) -> Option<&'t Node<'a>> {
        path.iter().try_fold(node, |n, key| n.get(key))
    }

    fn text_at<'t>(node: &'t Node, path: &[&str]) -> Option<&'t str> {
        at(node, path).and_then(Tree::as_str)
    }

    fn name_of<'t>(node: &'t Node) -> Option<&'t str> {
        node.get("name")?.as_str()
    }

    fn read(v: &Value) -> Node<'static> {
        let text: &'static str = Box::leak(v.to_string().into_boxed_str());
        read_text(text).expect("JSON")
    }

    /// The raw members of a node, with their paths, and the elements read when asked for.
    fn raw_paths(node: &Node, path: &str, out: &mut Vec<String>) {
        match node {
            Node::Raw(_) => out.push(path.to_string()),
            Node::Lazy(..) => out.push(format!("{path} when asked")),
            Node::List(items) => {
                for (i, item) in items.iter().enumerate() {
                    raw_paths(item, &format!("{path}[{i}]"), out);
                }
            }
            Node::Object(members, _) => {
                for (k, v) in members {
                    raw_paths(v, &format!("{path}.{k}"), out);
                }
            }
            _ => {}
        }
    }

    /// The template of an object's text, read where the text has it, and that text.
    fn template_in(object: &str) -> (Node<'_>, &str) {
        let start = object.find("\"template\"").expect("a template") + "\"template\"".len();
        let text = object[start..]
            .trim_start()
            .strip_prefix(':')
            .expect("a member");
        let node = template_seed(&TEMPLATE)
            .deserialize(&mut serde_json::Deserializer::from_str(text))
            .expect("JSON");
        let raw: &RawValue = serde_json::Deserializer::from_str(text)
            .into_iter::<&RawValue>()
            .next()
            .expect("a value")
            .expect("JSON");
        (node, raw.get())
    }

    #[test]
    fn a_template_is_found_as_its_own_text_however_it_is_spaced() {
        let object = json!({"spec": {"template": {
            "metadata": {"annotations": {"k": "v\"quoted\""}, "labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "env": [{"name": "E", "value": "1"}]}],
                "volumes": [{"name": "v"}], "hostname": "h"}
        }}, "status": {}});
        for text in [
            object.to_string(),
            serde_json::to_string_pretty(&object).expect("JSON"),
        ] {
            let (node, template) = template_in(&text);
            assert_eq!(node.text_in(&text), Some(template));
        }
    }

    #[test]
    fn a_template_whose_start_cannot_be_told_is_not_found() {
        for text in [
            // An escaped key: not borrowed from the text.
            r#"{"template": {"\u006detadata": {}, "spec": {"hostname": "h"}}}"#,
            // A repeated key, first in the text or anywhere in an object read.
            r#"{"template": {"spec": 1, "metadata": {"name": "m"}, "spec": {"hostname": "h"}}}"#,
            r#"{"template": {"metadata": {"annotations": {"k": "1", "k": "2", "l": "3"}}, "spec": {"hostname": "h"}}}"#,
            r#"{"template": {"metadata": {}, "a": 1, "a": 2, "spec": {"hostname": "h"}}}"#,
            // Nothing in it to tell where it starts.
            r#"{"template": {}}"#,
        ] {
            let (node, _) = template_in(text);
            assert_eq!(node.text_in(text), None, "{text}");
        }
        // Read from another text.
        let text = r#"{"template": {"metadata": {}, "spec": {"hostname": "h"}}}"#;
        let (node, template) = template_in(text);
        assert_eq!(node.text_in(template), Some(template));
        let copy = String::from(text);
        assert_eq!(node.text_in(&copy), None);
    }

    #[test]
    fn a_template_whose_last_piece_is_not_borrowed_is_found_by_reading_to_its_end() {
        for text in [
            r#"{"template": {"spec": {"hostname": "h"}, "metadata": {"annotations": {"k": 1}}}}"#,
            r#"{"template": {"spec": {"containers": []}}}"#,
            r#"{"template": {"spec": {"containers": [{"env": [ ]} ] } }, "status": {}}"#,
            r#"{"template": {"metadata": {"annotations": {"k": "v\"quoted\""}}}}"#,
            r#"{"template": {"metadata": {"annotations": {"k": null}}, "spec": {"volumes": [true]}}}"#,
            r#"{"template": {"spec": {"volumes": [], "containers": [{"name": "c", "env": []}]}}}"#,
        ] {
            let (node, template) = template_in(text);
            assert_eq!(node.text_in(text), Some(template), "{text}");
        }
    }

    #[test]
    fn only_what_the_shape_reads_is_read() {
        let template = json!({
            "metadata": {"labels": {"app": "a"}, "annotations": {"k": "v"}},
            "spec": {
                "volumes": [{"name": "v"}],
                "initContainers": [{"name": "i", "image": "busybox"}],
                "containers": [{"name": "c", "image": "app:1", "env": [{"name": "E", "value": "1"}],
                    "volumeMounts": [{"name": "v", "mountPath": "/v"}], "ports": [{"containerPort": 8080}]}],
                "dnsPolicy": "ClusterFirst"
            }
        });
        let node = read(&template);
        let mut raw = Vec::new();
        raw_paths(&node, "", &mut raw);
        assert_eq!(
            raw,
            [
                ".metadata.labels",
                ".spec.containers[0].env[0] when asked",
                ".spec.containers[0].image",
                ".spec.containers[0].name",
                ".spec.containers[0].ports",
                ".spec.containers[0].volumeMounts[0] when asked",
                ".spec.dnsPolicy",
                ".spec.initContainers[0].image",
                ".spec.initContainers[0].name",
                ".spec.volumes[0] when asked",
            ]
        );
        assert_eq!(node.to_value(), Some(template.clone()));
        assert_eq!(serde_json::to_value(&node).ok(), Some(template));
        // Asked for, an element reads as deep as its shape says.
        let volume = at(&node, &["spec", "volumes"])
            .and_then(|v| v.as_list())
            .and_then(|v| v.first());
        assert_eq!(volume.and_then(name_of), Some("v"));
        // Of an unexpected shape, a level is read whole: nothing of it stays raw.
        let odd = read(&json!({"spec": {"containers": {"c": {"image": "app:1"}}}}));
        let mut raw = Vec::new();
        raw_paths(&odd, "", &mut raw);
        assert_eq!(raw, Vec::<String>::new());
    }

    #[test]
    fn an_element_read_when_asked_is_read_only_as_deep_as_its_shape_says() {
        let template = json!({"spec": {
            "volumes": [{"name": "b", "projected": {"defaultMode": 420, "sources": [
                {"secret": {"name": "s", "items": [{"key": "k", "path": "p"}]}},
                {"downwardAPI": {"items": []}}]}}],
            "containers": [{"name": "c",
                "env": [{"name": "E", "value": "1", "valueFrom": {
                    "secretKeyRef": {"name": "s", "key": "k"},
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "f"}}}],
                "volumeMounts": [{"name": "b", "mountPath": "/b", "readOnly": true}]}]
        }});
        let node = read(&template);
        let element = |path: &[&str]| {
            let list = at(&node, path).and_then(|l| l.as_list());
            let element = list.and_then(|l| l.first()).expect("an element");
            // Asked for: read now.
            assert!(element.is_object());
            let mut raw = Vec::new();
            raw_paths(element.read(), "", &mut raw);
            raw
        };
        assert_eq!(
            element(&["spec", "volumes"]),
            [
                ".projected.defaultMode",
                ".projected.sources[0].secret.items",
                ".projected.sources[1].downwardAPI",
            ]
        );
        let container = at(&node, &["spec", "containers"])
            .and_then(|c| c.as_list()?.first())
            .expect("a container");
        let first = |key: &str| {
            let element = container.get(key)?.as_list()?.first()?;
            element.is_object().then(|| {
                let mut raw = Vec::new();
                raw_paths(element.read(), "", &mut raw);
                raw
            })
        };
        assert_eq!(
            first("env").expect("env"),
            [
                ".valueFrom.fieldRef.apiVersion",
                ".valueFrom.secretKeyRef.key"
            ]
        );
        assert_eq!(first("volumeMounts").expect("mounts"), [".readOnly"]);
        // What stays raw still compares as JSON, whatever its text.
        let respaced = r#"{"spec": {"volumes": [{"name": "b", "projected": {"sources": [
            {"secret": {"items": [{"path": "p", "key": "k"}], "name": "s"}},
            {"downwardAPI": {"items": []}}], "defaultMode": 420}}]}}"#;
        let volumes = |n: &Node<'static>| at(n, &["spec", "volumes"]).cloned();
        let other = read_text(respaced).expect("JSON");
        assert_eq!(volumes(&node), volumes(&other));
        // And differs where it differs as JSON.
        let changed = respaced.replace(r#""path": "p""#, r#""path": "q""#);
        let changed = read_text(Box::leak(changed.into_boxed_str())).expect("JSON");
        assert_ne!(volumes(&node), volumes(&changed));
        assert_eq!(node.to_value(), Some(template));
    }

    #[test]
    fn nodes_compare_as_json_whatever_their_text() {
        let a = read(&json!({"spec": {"containers": [{"name": "c", "image": "app:1"}]}}));
        let same = r#"{"spec": {"containers": [{"image": "app:1",   "name": "c"}]}}"#;
        let moved = read(&json!({"spec": {"initContainers": [{"name": "c", "image": "app:1"}]}}));
        let other = read(&json!({"spec": {"containers": [{"name": "c", "image": "app:2"}]}}));
        assert_eq!(a, read_text(same).expect("JSON"));
        assert_ne!(a, moved);
        assert_ne!(a, other);
        // A list of containers against an object of them.
        let listed = read(&json!({"spec": {"containers": [{"name": "c"}]}}));
        let whole = read(&json!({"spec": {"containers": {"name": "c"}}}));
        assert_ne!(listed, whole);
        assert_eq!(
            read_text(r#"{"x": {"a": 1}}"#).expect("JSON"),
            Node::Object(vec![("x".into(), read(&json!({"a": 1})))], false)
        );
    }

    #[test]
    fn a_repeated_key_keeps_its_last_value_as_a_tree_does() {
        let repeated = r#"{"spec": {"dnsPolicy": "a", "containers": [], "dnsPolicy": "b"},
            "metadata": {"annotations": {"k": "1", "k": "2"}}}"#;
        let node = read_text(repeated).expect("JSON");
        let tree: Value = serde_json::from_str(repeated).expect("JSON");
        assert_eq!(node.to_value(), Some(tree.clone()));
        assert_eq!(node, read(&tree));
        assert_eq!(text_at(&node, &["metadata", "annotations", "k"]), Some("2"));
    }

    #[test]
    fn the_search_finds_the_text_or_an_escape_wherever_it_sits() {
        let needle = b"SERVICE_BINDING_ROOT";
        let naive =
            |hay: &[u8]| hay.contains(&b'\\') || hay.windows(needle.len()).any(|w| w == needle);
        for insert in [&needle[..], b"\\", b"SERVICE_BINDING_ROO", b"S", b"SS"] {
            for at in 0..30 {
                for len in 0..60 {
                    let mut hay = vec![b'x'; len];
                    if at <= len {
                        hay.splice(at..at, insert.iter().copied());
                    }
                    hay.truncate(len);
                    assert_eq!(
                        has_or_escape(&hay, needle),
                        naive(&hay),
                        "{:?}",
                        String::from_utf8_lossy(&hay)
                    );
                }
            }
        }
        // A needle longer than the 255 a shift is capped at, found and nearly found.
        let long: Vec<u8> = (0..300u16).map(|i| b'a' + (i % 26) as u8).collect();
        let mut near = long.clone();
        near[299] = b'#';
        for at in [0, 1, 7, 255, 256, 400] {
            for insert in [&long, &near] {
                let mut hay = vec![b'x'; 700];
                hay.splice(at..at, insert.iter().copied());
                let found = hay.windows(long.len()).any(|w| w == long);
                assert_eq!(has_or_escape(&hay, &long), found, "at {at}");
            }
        }
    }

    #[test]
    fn an_element_not_yet_read_may_contain_only_what_its_text_can_hold() {
        let template = r#"{"spec": {"containers": [{"env": [
            {"name": "PORT", "value": "8080"},
            {"name": "SERVICE_BINDING_ROO\u0054", "value": "/b"},
            {"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}]}]}}"#;
        let node = read_text(template).expect("JSON");
        let env = at(&node, &["spec", "containers"])
            .and_then(|c| c.as_list()?.first()?.get("env")?.as_list())
            .expect("env");
        let root = "SERVICE_BINDING_ROOT";
        // No such text and no escape: it cannot be there.
        assert!(!env[0].may_contain(root));
        // An escape may spell it.
        assert!(env[1].may_contain(root));
        assert_eq!(name_of(&env[1]), Some(root));
        assert!(env[2].may_contain(root));
        // Once read, it is asked as a tree.
        assert_eq!(name_of(&env[0]), Some("PORT"));
        assert!(env[0].may_contain(root));
    }

    #[test]
    fn templates_of_any_shape_read_as_their_trees() {
        for text in [
            r#"{"metadata": null}"#,
            r#"{"spec": {"containers": {"name": "c"}}}"#,
            r#"{"spec": {"containers": ["c", 1, null, true, -2.5]}}"#,
            r#"{"spec": {}, "spec": {"volumes": []}}"#,
            r#"{"spec": {"contai\u006eers": [{"env": [{"name": "\u0041"}]}]}}"#,
            r#"[]"#,
            r#""text""#,
        ] {
            let node = read_text(text).expect(text);
            let tree: Value = serde_json::from_str(text).expect(text);
            assert_eq!(node.to_value(), Some(tree.clone()), "{text}");
            assert_eq!(serde_json::to_value(&node).ok(), Some(tree), "{text}");
        }
        for text in [
            r#"{"spec": {}"#,
            r#"{} {}"#,
            r#"{"metadata": {"annotations": {"k": 1e400}}}"#,
        ] {
            assert!(read_text(text).is_none(), "{text}");
        }
    }
}
