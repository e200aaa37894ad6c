//! A workload object read only as deep as the policy looks, in the one pass that reads the
//! request. Every `metadata` member but `managedFields`, `status` (of the stored `oldObject`
//! only) and every `spec` member but the pod template become JSON values; the pod template is
//! read only as deep as binding recognition looks (`template/tree.rs`); `managedFields`
//! (server-side apply's bookkeeping, often most of the metadata, never read) and every other
//! member stay the request's own raw JSON. The decision reads the values; an edit changes
//! them, and the edited object is written back as the request's raw members with only the
//! values re-emitted.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::template::tree::{Node, TEMPLATE_SEED};

const SPEC: &str = "spec";
const TEMPLATE: &str = "template";
const METADATA: &str = "metadata";
const MANAGED_FIELDS: &str = "managedFields";

#[derive(Debug, Default)]
pub struct Object<'a> {
    /// `metadata` without its `managedFields`, `status` (unless read `without_status`) and
    /// `spec` without its `template`,
    /// as values; `Null` when the object is absent or not a JSON object. Edits are made here.
    pub read: Value,
    /// The members `kept_apart` names (`spec.template`, `metadata.managedFields`), by name.
    kept: BTreeMap<&'static str, Node<'a>>,
    /// Every other top-level member, raw. A repeated key keeps its last value, as it does in a
    /// tree.
    rest: BTreeMap<String, &'a RawValue>,
}

impl<'a> Object<'a> {
    /// `spec.template`, read as far as binding recognition looks.
    pub fn template(&self) -> Option<&Node<'a>> {
        self.kept.get(TEMPLATE)
    }

    /// The object with the edits made to `read`, as JSON that serialises without building a
    /// tree of the members nobody read.
    pub fn edited(&self) -> Edited<'_> {
        Edited(self)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Object<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ObjectVisitor { read_status: true })
    }
}

/// The object a request asks to store, for `deserialize_with`: its `status` is never looked at
/// (only the stored object's tells whether a rollout is in progress) and is written back as
/// the request has it, so it stays raw.
pub fn without_status<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Object<'de>, D::Error> {
    deserializer.deserialize_any(ObjectVisitor { read_status: false })
}

struct ObjectVisitor {
    read_status: bool,
}

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut read = Map::new();
        let mut kept = BTreeMap::new();
        let mut rest = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            if let Some(member) = kept_apart(&key) {
                let parts = map.next_value_seed(Split(member))?;
                // A repeated key keeps its last value, raw member included, as a tree does.
                match parts.apart {
                    Some(node) => kept.insert(member, node),
                    None => kept.remove(member),
                };
                read.insert(key, parts.fields);
                continue;
            }
            match key.as_str() {
                "status" if self.read_status => {
                    read.insert(key, map.next_value()?);
                }
                _ => {
                    rest.insert(key, map.next_value()?);
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

/// The member of a top-level member that is read apart: the pod template (read as far as
/// binding recognition looks) and `managedFields` (never read, kept raw).
fn kept_apart(key: &str) -> Option<&'static str> {
    match key {
        SPEC => Some(TEMPLATE),
        METADATA => Some(MANAGED_FIELDS),
        _ => None,
    }
}

/// A member read as values but for the member of its own that `kept_apart` names. The whole of
/// it is a value when it is not an object.
struct Split(&'static str);

struct Parts<'a> {
    fields: Value,
    apart: Option<Node<'a>>,
}

impl Parts<'_> {
    fn other(fields: Value) -> Self {
        Parts {
            fields,
            apart: None,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Split {
    type Value = Parts<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Split {
    type Value = Parts<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Map::new();
        let mut apart = None;
        while let Some(key) = map.next_key::<String>()? {
            if key != self.0 {
                fields.insert(key, map.next_value()?);
            } else if key == TEMPLATE {
                apart = Some(map.next_value_seed(TEMPLATE_SEED)?);
            } else {
                apart = Some(Node::Raw(map.next_value()?));
            }
        }
        Ok(Parts {
            fields: Value::Object(fields),
            apart,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Parts::other(Value::Array(items)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Parts::other(Value::Null))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Parts::other(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Parts::other(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Parts::other(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Parts::other(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Parts::other(Value::from(v)))
    }
}

/// An object with its edits, serialised from the values read and the raw rest.
pub struct Edited<'o>(&'o Object<'o>);

impl Serialize for Edited<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let object = self.0;
        let Value::Object(read) = &object.read else {
            return object.read.serialize(serializer);
        };
        let mut map = serializer.serialize_map(Some(read.len() + object.rest.len()))?;
        for (key, value) in read {
            match (value, kept_apart(key)) {
                (Value::Object(fields), Some(member)) => map.serialize_entry(
                    key,
                    &PartsOut {
                        fields,
                        member,
                        apart: object.kept.get(member),
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

/// A `Split` member as read (and edited), with its member read apart put back.
struct PartsOut<'o> {
    fields: &'o Map<String, Value>,
    member: &'static str,
    apart: Option<&'o Node<'o>>,
}

impl Serialize for PartsOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.fields.len() + usize::from(self.apart.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        for (key, value) in self.fields {
            map.serialize_entry(key, value)?;
        }
        if let Some(apart) = self.apart {
            map.serialize_entry(self.member, apart)?;
        }
        map.end()
    }
}
