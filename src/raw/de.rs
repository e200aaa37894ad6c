//! The request's objects read in the one pass that reads the request, only as deep as the
//! rules look: the plan laid out by level ([`Levels`]), and at each level the members it names
//! read as values (of a map named with prefixes, only those keys), pod templates read to their
//! shapes (`value/`), of the stored object's `status` only the members named; every other
//! member kept as the request's text.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::object::{Kept, Object, Part, RawMembers};
use crate::plan::{ReadPlan, Shape};
use crate::text::{as_in_a_tree, same_text, starts_with_text};
use crate::value::{template_seed, Key};

/// A visitor's methods for a scalar, which every reader here takes whole as `serde_json::Value`
/// does; `|value| EXPR` wraps it in what the visitor returns.
macro_rules! scalars_read_whole {
    (|$value:ident| $wrap:expr) => {
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            let $value = Value::Null;
            Ok($wrap)
        }

        fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
            let $value = Value::Bool(v);
            Ok($wrap)
        }

        fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
            let $value = Value::from(v);
            Ok($wrap)
        }

        fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
            let $value = Value::from(v);
            Ok($wrap)
        }

        fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
            let $value = Value::from(v);
            Ok($wrap)
        }

        fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
            let $value = Value::from(v);
            Ok($wrap)
        }
    };
}

impl<'a> Object<'a> {
    /// Reads an object from `deserializer`, whose text is `source`, as `plan` says; its
    /// `status` only when `status` is set (the stored object's: the object a request asks to
    /// store is written back, and its status as the request has it).
    pub(crate) fn read<'de: 'a, D: Deserializer<'de>>(
        deserializer: D,
        levels: &Levels,
        status: bool,
    ) -> Result<Self, D::Error> {
        let level = Level { levels, at: 0 };
        let (read, kept) = deserializer.deserialize_any(LevelSeed::new(level, status))?;
        if !read.is_object() {
            // Anything but an object is not a workload: nothing to read, nothing to edit.
            return Ok(Object::default());
        }
        Ok(Object {
            read,
            kept,
            source: "",
        })
    }
}

/// One object from its JSON text, read as `plan` says (its `status` too when `status` is set);
/// `None` when it is not JSON. For tests of what a plan reads.
pub fn read_object<'a>(text: &'a str, plan: &ReadPlan, status: bool) -> Option<Object<'a>> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let levels = Levels::new(plan);
    let object = Object::read(&mut deserializer, &levels, status).ok()?;
    deserializer.end().ok()?;
    Some(object.read_from(text))
}

/// A plan laid out by level: at each object on the way to something read, the keys read and
/// how. Built once per request, so a member costs a look at its own level's few keys.
pub(crate) struct Levels<'p> {
    levels: Vec<Vec<(&'static str, Member<'p>)>>,
    status: &'p [(&'static str, &'static [&'static str])],
}

impl<'p> Levels<'p> {
    pub fn new(plan: &'p ReadPlan) -> Self {
        let mut levels = Levels {
            levels: vec![Vec::new()],
            status: &plan.status,
        };
        for path in &plan.values {
            levels.add(path, Member::Value);
        }
        for (path, prefixes) in &plan.maps {
            levels.add(path, Member::Map(prefixes));
        }
        for &(path, shape) in &plan.templates {
            levels.add(path, Member::Template(shape));
        }
        levels
    }

    /// `how` at `path`, unless a member on the way is read otherwise (and so whole); a path
    /// asked for before only deeper within it is read as `how` now, whatever the order.
    fn add(&mut self, path: &'static [&'static str], how: Member<'p>) {
        let Some((last, within)) = path.split_last() else {
            return;
        };
        let mut level = 0;
        for key in within {
            let found = self.levels[level].iter().find(|(k, _)| same_text(k, key));
            level = match found {
                Some((_, Member::Within(next))) => *next,
                Some(_) => return,
                None => {
                    self.levels.push(Vec::new());
                    let next = self.levels.len() - 1;
                    self.levels[level].push((key, Member::Within(next)));
                    next
                }
            };
        }
        match self.levels[level]
            .iter_mut()
            .find(|(k, _)| same_text(k, last))
        {
            Some((_, found @ Member::Within(_))) => *found = how,
            Some(_) => {}
            None => self.levels[level].push((last, how)),
        }
    }
}

/// Where in the object a map being read sits.
#[derive(Clone, Copy)]
struct Level<'l, 'p> {
    levels: &'l Levels<'p>,
    at: usize,
}

/// How a member is read.
#[derive(Clone, Copy)]
enum Member<'p> {
    Value,
    Map(&'p [&'static str]),
    Template(&'static Shape),
    /// An object on the way to something read: its level.
    Within(usize),
}

impl<'p> Level<'_, 'p> {
    /// How member `key` is read here, and the plan's name for it; `None`: it stays raw.
    fn member(self, key: &str) -> Option<(&'static str, Member<'p>)> {
        self.levels.levels[self.at]
            .iter()
            .find(|(k, _)| same_text(k, key))
            .copied()
    }
}

/// One object of the request: its values, and its other parts. The whole of it is a value
/// when it is not an object.
struct LevelSeed<'l, 'p, 'a> {
    level: Level<'l, 'p>,
    /// Whether `status` is read here (the stored object's top).
    status: bool,
    out: PhantomData<Kept<'a>>,
}

impl<'l, 'p> LevelSeed<'l, 'p, '_> {
    fn new(level: Level<'l, 'p>, status: bool) -> Self {
        LevelSeed {
            level,
            status,
            out: PhantomData,
        }
    }
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for LevelSeed<'_, '_, 'a> {
    type Value = (Value, Kept<'a>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for LevelSeed<'_, '_, 'a> {
    type Value = (Value, Kept<'a>);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut read = Map::new();
        let mut kept = Kept::default();
        while let Some(key) = map.next_key_seed(Key::seed())? {
            if self.status && same_text(&key, "status") {
                let status = map.next_value_seed(Pick::Status(self.level.levels.status))?;
                read.insert(key.into_owned(), status);
                continue;
            }
            match self.level.member(&key) {
                None => kept.raw.push((key, map.next_value::<&'a RawValue>()?)),
                Some((_, Member::Value)) => {
                    read.insert(key.into_owned(), map.next_value()?);
                }
                Some((name, Member::Map(prefixes))) => {
                    let (value, unread) = map.next_value_seed(Partly(prefixes, PhantomData))?;
                    kept.set(name, Part::Unread(unread));
                    read.insert(key.into_owned(), value);
                }
                Some((name, Member::Template(shape))) => {
                    let template = map.next_value_seed(template_seed(shape))?;
                    kept.set(name, Part::Template(template));
                }
                Some((name, Member::Within(at))) => {
                    let level = Level { at, ..self.level };
                    let (value, inner) = map.next_value_seed(LevelSeed::new(level, false))?;
                    kept.set(name, Part::Within(inner));
                    read.insert(key.into_owned(), value);
                }
            }
        }
        as_in_a_tree(&mut kept.raw);
        Ok((Value::Object(read), kept))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        let value = Value::deserialize(de::value::SeqAccessDeserializer::new(seq))?;
        Ok((value, Kept::default()))
    }

    scalars_read_whole!(|value| (value, Kept::default()));
}

/// A map read only at the keys with one of the prefixes: those as a JSON object, the others raw.
/// Anything but an object is read whole.
struct Partly<'p, 'a>(&'p [&'static str], PhantomData<&'a RawValue>);

type PartlyRead<'a> = (Value, RawMembers<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Partly<'_, 'a> {
    type Value = PartlyRead<'a>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Partly<'_, 'a> {
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

    scalars_read_whole!(|value| (value, Vec::new()));
}

/// The stored object's `status` read as far as the plan says: of an object only the members
/// named, the rest checked as JSON syntax only and skipped. Anything of another shape is read
/// whole. The stored object is never written back.
#[derive(Clone, Copy)]
enum Pick<'p> {
    Status(&'p [(&'static str, &'static [&'static str])]),
    /// A member of it read in part: a list of objects, of which these members are read.
    Member(&'static [&'static str]),
    /// An element of that list.
    Element(&'static [&'static str]),
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
        let mut read = Map::new();
        while let Some(key) = map.next_key_seed(Key::seed())? {
            let value = match self {
                Pick::Member(_) => Some(map.next_value()?),
                Pick::Status(members) => {
                    let mut named = members.iter().filter(|(k, _)| same_text(k, &key));
                    match named.next() {
                        None => None,
                        // Whole when one of the plan's entries for it reads it whole.
                        Some((_, parts))
                            if parts.is_empty() || named.any(|(_, p)| p.is_empty()) =>
                        {
                            Some(map.next_value()?)
                        }
                        Some((_, parts)) => Some(map.next_value_seed(Pick::Member(parts))?),
                    }
                }
                Pick::Element(members) if members.iter().any(|m| same_text(m, &key)) => {
                    Some(map.next_value()?)
                }
                Pick::Element(_) => None,
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
        let Pick::Member(members) = self else {
            return Value::deserialize(de::value::SeqAccessDeserializer::new(seq));
        };
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(Pick::Element(members))? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    scalars_read_whole!(|value| value);
}
