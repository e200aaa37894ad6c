//! A workload object read only as deep as the policy looks, in the one pass that reads the
//! request. `metadata`, `status` (of the stored `oldObject` only) and every `spec` member but
//! the pod template become JSON values; the pod template and every other member stay the
//! request's own raw JSON. The decision reads the values; an edit changes them, and the edited
//! object is written back as the request's raw members with only the values re-emitted.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

const SPEC: &str = "spec";
const TEMPLATE: &str = "template";

#[derive(Debug, Default)]
pub struct Object<'a> {
    /// `metadata`, `status` (unless read `without_status`) and `spec` without its `template`,
    /// as values; `Null` when the object is absent or not a JSON object. Edits are made here.
    pub read: Value,
    /// `spec.template`, as the request has it.
    pub template: Option<&'a RawValue>,
    /// Every other top-level member, raw. A repeated key keeps its last value, as it does in a
    /// tree.
    rest: BTreeMap<String, &'a RawValue>,
}

impl<'a> Object<'a> {
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
        let mut template = None;
        let mut rest = BTreeMap::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                SPEC => {
                    let spec: Spec = map.next_value()?;
                    template = spec.template;
                    read.insert(key, spec.fields);
                }
                "metadata" => {
                    read.insert(key, map.next_value()?);
                }
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
            template,
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

/// `spec`: its members but the template as values (or the whole of it, when it is not an
/// object), and the template raw.
struct Spec<'a> {
    fields: Value,
    template: Option<&'a RawValue>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Spec<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SpecVisitor)
    }
}

struct SpecVisitor;

impl SpecVisitor {
    fn other<'a>(fields: Value) -> Spec<'a> {
        Spec {
            fields,
            template: None,
        }
    }
}

impl<'de> Visitor<'de> for SpecVisitor {
    type Value = Spec<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = Map::new();
        let mut template = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == TEMPLATE {
                template = Some(map.next_value()?);
            } else {
                fields.insert(key, map.next_value()?);
            }
        }
        Ok(Spec {
            fields: Value::Object(fields),
            template,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Self::other(Value::Array(items)))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Self::other(Value::Null))
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Self::other(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Self::other(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Self::other(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Self::other(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Self::other(Value::from(v)))
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
            match value {
                Value::Object(fields) if key == SPEC => map.serialize_entry(
                    key,
                    &SpecOut {
                        fields,
                        template: object.template,
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

/// `spec` as read (and edited), with the raw template put back.
struct SpecOut<'o> {
    fields: &'o Map<String, Value>,
    template: Option<&'o RawValue>,
}

impl Serialize for SpecOut<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len = self.fields.len() + usize::from(self.template.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        for (key, value) in self.fields {
            map.serialize_entry(key, value)?;
        }
        if let Some(template) = self.template {
            map.serialize_entry(TEMPLATE, template)?;
        }
        map.end()
    }
}
