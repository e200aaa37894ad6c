//! A workload object read only as deep as the policy looks, in the one pass that reads the
//! request. The members of `metadata` and `spec` the policy reads (`SPLITS`) and of the stored
//! `oldObject`'s `status` those a kind reads (`Pick`) become JSON values; the pod template is
//! read only as deep as binding recognition looks (`template/tree.rs`); every other member,
//! `metadata.managedFields` (server-side apply's bookkeeping, often most of the metadata)
//! among them, stays the request's own raw JSON. The decision reads the values; an edit
//! changes them, and the edited object is written back as the request's raw members with only
//! the values re-emitted, the pod template as its own text in the request.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::json::{as_in_a_tree, same_text, starts_with_text};
use crate::markers;
use crate::policy::APP_GUID_LABEL;
use crate::template::tree::{template_seed, Key, Node};
use crate::workload::{self, StatusMember};
use crate::writer::{write_value, Members};

/// The member read apart, and the top-level member that holds it.
const TEMPLATE: &str = "template";
const SPEC: &str = "spec";

/// How a top-level member is read: the members of its own that become values, and the one
/// read apart. Every other member of it stays raw.
struct Split {
    member: &'static str,
    values: &'static [&'static str],
    apart: Option<&'static str>,
    /// Maps among `values` of which only the keys starting with one of the prefixes given are
    /// read; the rest of each stays raw.
    partly: &'static [(&'static str, &'static [&'static str])],
}

/// Every member of `metadata` and `spec` that the decision or an edit reads or writes: the
/// names in messages, the markers, deletion, the generation a rollout has reached, the hold's
/// control (`Workload::control_path`) and the replica count; and the pod template, read apart.
/// Of the annotations and labels only the markers are read, and the app a refusal names. The
/// rest (`managedFields`, `ownerReferences`, the selector, the other labels and annotations,
/// ...) is never looked at.
const SPLITS: [Split; 2] = [
    Split {
        member: "metadata",
        values: &[
            "name",
            "namespace",
            "labels",
            "annotations",
            "generation",
            "deletionTimestamp",
        ],
        apart: None,
        // The workload's own annotations and labels: often most of its metadata (a projector
        // writes a JSON mapping per binding there); the policy reads only its markers, and the
        // app a refusal names.
        partly: &[
            ("annotations", &[markers::MARKER_PREFIX]),
            ("labels", &[markers::MARKER_PREFIX, APP_GUID_LABEL]),
        ],
    },
    Split {
        member: SPEC,
        values: &["updateStrategy", "paused", "replicas"],
        apart: Some(TEMPLATE),
        partly: &[],
    },
];

fn split(key: &str) -> Option<&'static Split> {
    SPLITS.iter().find(|s| same_text(s.member, key))
}

#[derive(Debug, Default)]
pub struct Object<'a> {
    /// What the policy reads (the `SPLITS` members of `metadata` and `spec`, and `status` unless
    /// read `without_status`), as values; `Null` when the object is absent or not a JSON
    /// object. Edits are made here.
    pub read: Value,
    /// The other parts of `metadata` and `spec`, by top-level key.
    kept: Vec<(&'static str, Kept<'a>)>,
    /// Every other top-level member, raw.
    rest: RawMembers<'a>,
    /// The text the object was read from (the request): the template is written back as its
    /// own text found there.
    source: &'a str,
}

/// The parts of a split member that are not values.
#[derive(Debug, Default)]
struct Kept<'a> {
    /// The member read apart (`spec.template`).
    apart: Option<Node<'a>>,
    /// Every other member, raw.
    raw: RawMembers<'a>,
    /// The members of each `partly` read map that are not read, raw.
    unread: Vec<(&'static str, RawMembers<'a>)>,
}

/// Members kept as the request has them: read into a list, then sorted once, a repeated key
/// keeping its last value (`json::as_in_a_tree`), which costs a pass where a map costs a
/// search and a node per member.
type RawMembers<'a> = Vec<(Cow<'a, str>, &'a RawValue)>;

impl<'a> Kept<'a> {
    fn unread(&self, member: &str) -> Option<&RawMembers<'a>> {
        self.unread
            .iter()
            .find(|(m, _)| *m == member)
            .map(|(_, unread)| unread)
    }
}

impl<'a> Object<'a> {
    /// `spec.template`, read as far as binding recognition looks.
    pub fn template(&self) -> Option<&Node<'a>> {
        self.kept(SPEC)?.apart.as_ref()
    }

    fn kept(&self, member: &str) -> Option<&Kept<'a>> {
        self.kept
            .iter()
            .find(|(m, _)| *m == member)
            .map(|(_, kept)| kept)
    }

    /// The object with the edits made to `read`, written without building a tree of the
    /// members nobody read.
    pub fn edited(&self) -> Edited<'_, 'a> {
        Edited(self)
    }

    /// The object, knowing `source` is the text it was read from.
    pub fn read_from(self, source: &'a str) -> Self {
        Object { source, ..self }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Object<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjectVisitor::new(true))
    }
}

/// The object a request asks to store, for `deserialize_with`: its `status` is never looked at
/// (only the stored object's tells whether a rollout is in progress) and is written back as
/// the request has it, so it stays raw.
pub fn without_status<'de: 'a, 'a, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Object<'a>, D::Error> {
    deserializer.deserialize_any(ObjectVisitor::new(false))
}

/// Reads an object from text that lives for `'a`.
struct ObjectVisitor<'a> {
    read_status: bool,
    out: PhantomData<Object<'a>>,
}

impl ObjectVisitor<'_> {
    fn new(read_status: bool) -> Self {
        ObjectVisitor {
            read_status,
            out: PhantomData,
        }
    }
}

impl<'de: 'a, 'a> Visitor<'de> for ObjectVisitor<'a> {
    type Value = Object<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut read = Map::new();
        let mut kept: Vec<(&'static str, Kept<'a>)> = Vec::new();
        let mut rest = Vec::new();
        while let Some(key) = map.next_key_seed(Key::seed())? {
            if let Some(split) = split(&key) {
                let (fields, parts) = map.next_value_seed(SplitSeed(split, PhantomData))?;
                // A repeated key keeps its last value, every part of it, as a tree does.
                kept.retain(|(m, _)| *m != split.member);
                kept.push((split.member, parts));
                read.insert(key.into_owned(), fields);
                continue;
            }
            match key.as_ref() {
                status if self.read_status && same_text(status, "status") => {
                    read.insert(key.into_owned(), map.next_value_seed(Pick::Status)?);
                }
                _ => {
                    rest.push((key, map.next_value::<&'a RawValue>()?));
                }
            }
        }
        as_in_a_tree(&mut rest);
        Ok(Object {
            read: Value::Object(read),
            kept,
            rest,
            source: "",
        })
    }

    // Anything but an object is not a workload: nothing to read, nothing to edit. Its parts
    // are still checked as a tree parse would.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Value>()?.is_some() {}
        Ok(Object::default())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Object::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Object::default())
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Object::default())
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Object::default())
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Object::default())
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Object::default())
    }
}

/// A split member: its values, and its other parts. The whole of it is a value when it is not
/// an object.
struct SplitSeed<'a>(&'static Split, PhantomData<Kept<'a>>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for SplitSeed<'a> {
    type Value = (Value, Kept<'a>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for SplitSeed<'a> {
    type Value = (Value, Kept<'a>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Map::new();
        let mut kept = Kept::default();
        while let Some(key) = map.next_key_seed(Key::seed())? {
            if let Some(&(member, prefixes)) =
                self.0.partly.iter().find(|(m, _)| same_text(m, &key))
            {
                let (value, unread) = map.next_value_seed(Partly(prefixes, PhantomData))?;
                // A repeated key keeps its last value, as in a tree.
                kept.unread.retain(|(m, _)| *m != member);
                kept.unread.push((member, unread));
                fields.insert(key.into_owned(), value);
            } else if self.0.values.iter().any(|v| same_text(v, &key)) {
                fields.insert(key.into_owned(), map.next_value()?);
            } else if self.0.apart.is_some_and(|apart| same_text(apart, &key)) {
                kept.apart = Some(map.next_value_seed(template_seed())?);
            } else {
                kept.raw.push((key, map.next_value::<&'a RawValue>()?));
            }
        }
        as_in_a_tree(&mut kept.raw);
        Ok((Value::Object(fields), kept))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok((Value::Array(items), Kept::default()))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, Kept::default()))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok((Value::Bool(v), Kept::default()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok((Value::from(v), Kept::default()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok((Value::from(v), Kept::default()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok((Value::from(v), Kept::default()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Value::from(v), Kept::default()))
    }
}

/// A map read only at the keys with one of the prefixes: those as a JSON object, the others raw.
/// Anything but an object is read whole.
struct Partly<'a>(&'static [&'static str], PhantomData<&'a RawValue>);

type PartlyRead<'a> = (Value, RawMembers<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Partly<'a> {
    type Value = PartlyRead<'a>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Partly<'a> {
    type Value = PartlyRead<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut read, mut unread) = (Map::new(), Vec::new());
        while let Some(key) = map.next_key_seed(Key::seed())? {
            if self.0.iter().any(|prefix| starts_with_text(&key, prefix)) {
                read.insert(key.into_owned(), map.next_value()?);
            } else {
                unread.push((key, map.next_value::<&'a RawValue>()?));
            }
        }
        as_in_a_tree(&mut unread);
        Ok((Value::Object(read), unread))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok((value, Vec::new()))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, Vec::new()))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok((Value::Bool(v), Vec::new()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok((Value::from(v), Vec::new()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok((Value::from(v), Vec::new()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok((Value::from(v), Vec::new()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Value::from(v), Vec::new()))
    }
}

/// `oldObject.status` read as far as some kind looks (`Workload::status_read`): of an object
/// only the members read, the rest checked as JSON syntax only and skipped. Anything of another
/// shape is read whole. The old object is never written back.
#[derive(Clone, Copy)]
enum Pick<'k> {
    Status,
    /// A member of it, read in part: a list of objects.
    Member(StatusMember<'k>),
    /// An element of that list.
    Element(StatusMember<'k>),
}

impl<'de> DeserializeSeed<'de> for Pick<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Pick<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let member = match self {
            Pick::Member(_) => {
                return Value::deserialize(de::value::MapAccessDeserializer::new(map))
            }
            Pick::Status => None,
            Pick::Element(member) => Some(member),
        };
        let mut read = Map::new();
        while let Some(key) = map.next_key_seed(Key::seed())? {
            let value = match member {
                None => match workload::status_member(&key) {
                    Some(member) if member.whole() => Some(map.next_value()?),
                    Some(member) => Some(map.next_value_seed(Pick::Member(member))?),
                    None => None,
                },
                Some(member) if member.reads(&key) => Some(map.next_value()?),
                Some(_) => None,
            };
            match value {
                Some(value) => {
                    read.insert(key.into_owned(), value);
                }
                None => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(read))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let Pick::Member(member) = self else {
            return Value::deserialize(de::value::SeqAccessDeserializer::new(seq));
        };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Pick::Element(member))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::from(v))
    }
}

/// An object with its edits: the values read (and edited), with the raw rest put back.
pub struct Edited<'o, 'a>(&'o Object<'a>);

impl Edited<'_, '_> {
    /// The length of the text the object was read from (the request, both objects in it).
    pub fn request_len(&self) -> usize {
        self.0.source.len()
    }

    /// Appends the object's JSON to `out`: keys and values as serde_json writes them, the raw
    /// members and the pod template as the request has them.
    pub fn write(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        let object = self.0;
        let Value::Object(read) = &object.read else {
            write_value(out, &object.read);
            return Ok(());
        };
        let mut members = Members::open(out);
        for (key, value) in read {
            match (value, split(key)) {
                (Value::Object(fields), Some(split)) => {
                    let kept = object.kept(split.member);
                    write_parts(members.key(key), fields, split, kept, object.source)?;
                }
                _ => members.value(key, value),
            }
        }
        for (key, raw) in &object.rest {
            members.raw(key, raw.get());
        }
        members.close();
        Ok(())
    }
}

/// A split member as read (and edited), with its other parts put back.
fn write_parts<'a>(
    out: &mut Vec<u8>,
    fields: &Map<String, Value>,
    split: &Split,
    kept: Option<&Kept<'a>>,
    source: &'a str,
) -> serde_json::Result<()> {
    let mut members = Members::open(out);
    for (key, value) in fields {
        match (value, kept.and_then(|kept| kept.unread(key))) {
            (Value::Object(read), Some(unread)) => {
                let mut map = Members::open(members.key(key));
                for (key, value) in read {
                    map.value(key, value);
                }
                for (key, raw) in unread {
                    map.raw(key, raw.get());
                }
                map.close();
            }
            _ => members.value(key, value),
        }
    }
    if let Some(kept) = kept {
        for (key, raw) in &kept.raw {
            members.raw(key, raw.get());
        }
        if let (Some(key), Some(node)) = (split.apart, &kept.apart) {
            // The template is never edited: its own text when it can be found, which costs a
            // copy instead of a walk.
            match node.text_in(source) {
                Some(text) => members.raw(key, text),
                None => members.serialized(key, node)?,
            }
        }
    }
    members.close();
    Ok(())
}
