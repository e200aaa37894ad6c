//! A Kubewarden ValidationRequest read in one pass: only the members the rules read. The SDK's
//! `ValidationRequest` also builds the user info and options (hash sets seeded from WASI
//! randomness); nothing reads them, so they are skipped while parsing.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use crate::de::Levels;
use crate::object::Object;
use crate::plan::ReadPlan;
use crate::value::Key;

/// The request's members the rules read. Absent or null strings read as empty.
#[derive(Debug, Default)]
pub struct Request<'a> {
    pub settings: Value,
    pub operation: String,
    pub group: String,
    pub kind: String,
    pub sub_resource: String,
    pub namespace: String,
    pub name: String,
    pub object: Object<'a>,
    pub old_object: Object<'a>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Kind {
    group: Option<String>,
    kind: Option<String>,
}

/// The payload of a `validate` call, read as `plan` says; `None` when it is not a
/// ValidationRequest.
pub fn read<'a>(payload: &'a [u8], plan: &ReadPlan) -> Option<Request<'a>> {
    // JSON text is UTF-8: checked once here, strings are then read without a check each.
    let text = std::str::from_utf8(payload).ok()?;
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let levels = Levels::new(plan);
    let mut request = PayloadSeed(&levels).deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    request.object = std::mem::take(&mut request.object).read_from(text);
    Some(request)
}

/// `{"settings": …, "request": …}`; `request` is required, `settings` defaults to null.
struct PayloadSeed<'l, 'p>(&'l Levels<'p>);

impl<'de> DeserializeSeed<'de> for PayloadSeed<'_, '_> {
    type Value = Request<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PayloadSeed<'_, '_> {
    type Value = Request<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a ValidationRequest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut settings, mut request) = (None, None);
        while let Some(key) = map.next_key_seed(Key::seed())? {
            match key.as_ref() {
                "settings" => once(&mut settings, "settings", map.next_value()?)?,
                "request" => once(
                    &mut request,
                    "request",
                    map.next_value_seed(RequestSeed(self.0))?,
                )?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        let mut request = request.ok_or_else(|| de::Error::missing_field("request"))?;
        request.settings = settings.unwrap_or_default();
        Ok(request)
    }
}

/// A member read once: a repeated one makes the request unreadable, as a derived reader does.
fn once<T, E: de::Error>(slot: &mut Option<T>, name: &'static str, value: T) -> Result<(), E> {
    if slot.replace(value).is_some() {
        return Err(E::duplicate_field(name));
    }
    Ok(())
}

/// The AdmissionRequest.
struct RequestSeed<'l, 'p>(&'l Levels<'p>);

impl<'de> DeserializeSeed<'de> for RequestSeed<'_, '_> {
    type Value = Request<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

/// An object as `plan` reads it, its `status` when `status` is set.
struct ObjectSeed<'l, 'p>(&'l Levels<'p>, bool);

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_, '_> {
    type Value = Object<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        Object::read(deserializer, self.0, self.1)
    }
}

impl<'de> Visitor<'de> for RequestSeed<'_, '_> {
    type Value = Request<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an AdmissionRequest")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut texts: [Option<Option<String>>; 4] = Default::default();
        let (mut kind, mut object, mut old_object) = (None, None, None);
        while let Some(key) = map.next_key_seed(Key::seed())? {
            let text = match key.as_ref() {
                "operation" => 0,
                "subResource" => 1,
                "namespace" => 2,
                "name" => 3,
                "kind" => {
                    once(&mut kind, "kind", map.next_value::<Option<Kind>>()?)?;
                    continue;
                }
                // The object a request asks to store: its `status` is never looked at (only the
                // stored object's tells whether a rollout is in progress) and is written back
                // as the request has it, so it stays raw.
                "object" => {
                    let read = map.next_value_seed(ObjectSeed(self.0, false))?;
                    once(&mut object, "object", read)?;
                    continue;
                }
                "oldObject" => {
                    let read = map.next_value_seed(ObjectSeed(self.0, true))?;
                    once(&mut old_object, "oldObject", read)?;
                    continue;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            once(&mut texts[text], key_name(text), map.next_value()?)?;
        }
        let [operation, sub_resource, namespace, name] =
            texts.map(|t| t.flatten().unwrap_or_default());
        let kind = kind.flatten().unwrap_or_default();
        Ok(Request {
            settings: Value::Null,
            operation,
            group: kind.group.unwrap_or_default(),
            kind: kind.kind.unwrap_or_default(),
            sub_resource,
            namespace,
            name,
            object: object.unwrap_or_default(),
            old_object: old_object.unwrap_or_default(),
        })
    }
}

fn key_name(text: usize) -> &'static str {
    ["operation", "subResource", "namespace", "name"][text]
}
