//! A workload object read only as deep as the policy looks, in the one pass that reads the
//! request. The members of `metadata` and `spec` the policy reads (`SPLITS`) and the stored
//! `oldObject`'s `status` become JSON values; the pod template is read only as deep as binding
//! recognition looks (`template/tree.rs`); every other member, `metadata.managedFields`
//! (server-side apply's bookkeeping, often most of the metadata) among them, stays the
//! request's own raw JSON. The decision reads the values; an edit changes them, and the edited
//! object is written back as the request's raw members with only the values re-emitted.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::markers;
use crate::template::tree::{template_seed, Node};

/// The member read apart, and the top-level member that holds it.
const TEMPLATE: &str = "template";
const SPEC: &str = "spec";

/// How a top-level member is read: the members of its own that become values, and the one
/// read apart. Every other member of it stays raw.
struct Split {
    member: &'static str,
    values: &'static [&'static str],
    apart: Option<&'static str>,
    /// A map among `values` of which only the keys with this prefix are read; the rest of it
    /// stays raw.
    partly: Option<(&'static str, &'static str)>,
}

/// Every member of `metadata` and `spec` that the decision or an edit reads or writes: the
/// names in messages, the markers, deletion, the generation a rollout has reached, the hold's
/// control (`Workload::control_path`) and the replica count; and the pod template, read apart.
/// Of the annotations only the markers are read. The rest (`managedFields`, `ownerReferences`,
/// the selector, the other annotations, ...) is never looked at.
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
        // The workload's own annotations: often most of its metadata (a projector writes a
        // JSON mapping per binding there); the policy reads only its markers.
        partly: Some(("annotations", markers::ANNOTATION_PREFIX)),
    },
    Split {
        member: SPEC,
        values: &["updateStrategy", "paused", "replicas"],
        apart: Some(TEMPLATE),
        partly: None,
    },
];

fn split(key: &str) -> Option<&'static Split> {
    SPLITS.iter().find(|s| s.member == key)
}

#[derive(Debug, Default)]
pub struct Object<'a> {
    /// What the policy reads (the `SPLITS` members of `metadata` and `spec`, and `status` unless
    /// read `without_status`), as values; `Null` when the object is absent or not a JSON
    /// object. Edits are made here.
    pub read: Value,
    /// The other parts of `metadata` and `spec`, by top-level key.
    kept: BTreeMap<&'static str, Kept<'a>>,
    /// Every other top-level member, raw. A repeated key keeps its last value, as it does in a
    /// tree.
    rest: BTreeMap<String, &'a RawValue>,
}

/// The parts of a split member that are not values.
#[derive(Debug, Default)]
struct Kept<'a> {
    /// The member read apart (`spec.template`).
    apart: Option<Node<'a>>,
    /// Every other member, raw, a repeated key keeping its last value.
    raw: BTreeMap<String, &'a RawValue>,
    /// The members of the `partly` read map that are not read, raw.
    unread: BTreeMap<String, &'a RawValue>,
}

impl<'a> Object<'a> {
    /// `spec.template`, read as far as binding recognition looks.
    pub fn template(&self) -> Option<&Node<'a>> {
        self.kept.get(SPEC)?.apart.as_ref()
    }

    /// The object with the edits made to `read`, as JSON that serialises without building a
    /// tree of the members nobody read.
    pub fn edited(&self) -> Edited<'_, 'a> {
        Edited(self)
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
        let mut kept = BTreeMap::new();
        let mut rest = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(split) = split(&key) {
                let (fields, parts) = map.next_value_seed(SplitSeed(split, PhantomData))?;
                // A repeated key keeps its last value, every part of it, as a tree does.
                kept.insert(split.member, parts);
                read.insert(key, fields);
                continue;
            }
            match key.as_str() {
                "status" if self.read_status => {
                    read.insert(key, map.next_value()?);
                }
                _ => {
                    rest.insert(key, map.next_value::<&'a RawValue>()?);
                }
            }
        }
        Ok(Object {
            read: Value::Object(read),
            kept,
            rest,
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
        while let Some(key) = map.next_key::<String>()? {
            if let Some((_, prefix)) = self.0.partly.filter(|(m, _)| *m == key) {
                let (value, unread) = map.next_value_seed(Partly(prefix, PhantomData))?;
                // A repeated key keeps its last value, as in a tree.
                kept.unread = unread;
                fields.insert(key, value);
            } else if self.0.values.contains(&key.as_str()) {
                fields.insert(key, map.next_value()?);
            } else if self.0.apart == Some(key.as_str()) {
                kept.apart = Some(map.next_value_seed(template_seed())?);
            } else {
                kept.raw.insert(key, map.next_value::<&'a RawValue>()?);
            }
        }
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

/// A map read only at the keys with a prefix: those as a JSON object, the others raw. Anything
/// but an object is read whole.
struct Partly<'a>(&'static str, PhantomData<&'a RawValue>);

type PartlyRead<'a> = (Value, BTreeMap<String, &'a RawValue>);

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
        let (mut read, mut unread) = (Map::new(), BTreeMap::new());
        while let Some(key) = map.next_key::<String>()? {
            if key.starts_with(self.0) {
                read.insert(key, map.next_value()?);
            } else {
                unread.insert(key, map.next_value::<&'a RawValue>()?);
            }
        }
        Ok((Value::Object(read), unread))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok((value, BTreeMap::new()))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok((Value::Null, BTreeMap::new()))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok((Value::Bool(v), BTreeMap::new()))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok((Value::from(v), BTreeMap::new()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok((Value::from(v), BTreeMap::new()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok((Value::from(v), BTreeMap::new()))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok((Value::from(v), BTreeMap::new()))
    }
}

/// An object with its edits, serialised from the values read and the raw rest.
pub struct Edited<'o, 'a>(&'o Object<'a>);

impl<'a> Serialize for Edited<'_, 'a> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let object = self.0;
        let Value::Object(read) = &object.read else {
            return object.read.serialize(serializer);
        };
        // No length: serde_json closes an object given `Some(0)` at once.
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in read {
            match (value, split(key)) {
                (Value::Object(fields), Some(split)) => map.serialize_entry(
                    key,
                    &PartsOut {
                        fields,
                        split,
                        kept: object.kept.get(split.member),
                    },
                )?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        for (key, raw) in &object.rest {
            map.serialize_entry(key, raw)?;
        }
        map.end()
    }
}

/// A split member as read (and edited), with its other parts put back.
struct PartsOut<'o, 'a> {
    fields: &'o Map<String, Value>,
    split: &'static Split,
    kept: Option<&'o Kept<'a>>,
}

impl Serialize for PartsOut<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (apart, raw) = match self.kept {
            Some(kept) => (self.split.apart.zip(kept.apart.as_ref()), Some(&kept.raw)),
            None => (None, None),
        };
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.fields {
            let partly = self.split.partly.is_some_and(|(m, _)| m == key);
            match (value, self.kept) {
                (Value::Object(read), Some(kept)) if partly => map.serialize_entry(
                    key,
                    &MapOut {
                        read,
                        unread: &kept.unread,
                    },
                )?,
                _ => map.serialize_entry(key, value)?,
            }
        }
        for (key, value) in raw.into_iter().flatten() {
            map.serialize_entry(key, value)?;
        }
        if let Some((key, node)) = apart {
            map.serialize_entry(key, node)?;
        }
        map.end()
    }
}

/// A partly read map: its members read (and edited), and the unread ones put back.
struct MapOut<'o, 'a> {
    read: &'o Map<String, Value>,
    unread: &'o BTreeMap<String, &'a RawValue>,
}

impl Serialize for MapOut<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.read {
            map.serialize_entry(key, value)?;
        }
        for (key, raw) in self.unread {
            map.serialize_entry(key, raw)?;
        }
        map.end()
    }
}
