//! A pod template read in one pass as deep as binding recognition looks: the members it reads
//! (`metadata.annotations`, `spec.volumes`, and each container's `env` and `volumeMounts`)
//! become JSON values in their places; every other member, at every level, stays the
//! request's raw JSON. Two templates whose other members are equal compare as their skeletons
//! do, so the members nobody reads (probes, resources, commands, affinity) are built into
//! trees only where their text differs.
//!
//! A template of another shape (a level that is not an object, `containers` that is not a
//! list, a structural key given twice, an escaped key) is not read: the caller compares whole
//! trees.

use std::fmt;

use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// Where a raw member sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Template,
    Metadata,
    Spec,
    /// A container: `init` for `initContainers`, then its index.
    Container {
        init: bool,
        index: usize,
    },
}

/// The members a template's skeleton leaves raw, with their places and keys (sorted by place
/// and key once read, see `by_place`).
type Rest<'a> = Vec<(Place, &'a str, &'a RawValue)>;

#[derive(Debug)]
pub struct Skeleton<'a> {
    /// The template with only the members binding recognition reads, and the objects and
    /// lists that hold them, as a value.
    pub tree: Value,
    rest: Rest<'a>,
}

impl<'a> Skeleton<'a> {
    /// `None` for a template of another shape, or not JSON.
    pub fn read(text: &'a str) -> Option<Skeleton<'a>> {
        let mut rest = Rest::new();
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let tree = Level {
            place: Place::Template,
            rest: &mut rest,
        }
        .deserialize(&mut deserializer)
        .ok()?;
        deserializer.end().ok()?;
        Some(Skeleton {
            tree,
            rest: by_place(rest),
        })
    }

    /// Every member left raw is equal, as JSON, to the other's in the same place. The API
    /// server writes both templates the same way, so equal text settles almost every member;
    /// different text is compared as trees.
    pub fn rest_equal(&self, other: &Skeleton) -> bool {
        self.rest.len() == other.rest.len()
            && self
                .rest
                .iter()
                .zip(&other.rest)
                .all(|((p, k, a), (q, l, b))| (p, k) == (q, l) && raw_equal(a, b))
    }
}

/// Sorted by place and key, a repeated key keeping its last value, as it does in a tree. (A
/// list sorted once costs less than a map built member by member.)
fn by_place(mut rest: Rest) -> Rest {
    // Stable: of members with the same place and key, the last read stays last.
    rest.sort_by(|(p, k, _), (q, l, _)| (p, k).cmp(&(q, l)));
    let mut kept: Rest = Vec::with_capacity(rest.len());
    for member in rest {
        if kept
            .last()
            .is_some_and(|(p, k, _)| (*p, *k) == (member.0, member.1))
        {
            kept.pop();
        }
        kept.push(member);
    }
    kept
}

fn raw_equal(a: &RawValue, b: &RawValue) -> bool {
    if a.get() == b.get() {
        return true;
    }
    let tree = |r: &RawValue| serde_json::from_str::<Value>(r.get()).ok();
    matches!((tree(a), tree(b)), (Some(a), Some(b)) if a == b)
}

/// One object level of the template.
struct Level<'r, 'a> {
    place: Place,
    rest: &'r mut Rest<'a>,
}

/// What a member of a level becomes.
enum Member {
    Value,
    Level(Place),
    Containers { init: bool },
    Raw,
}

impl Level<'_, '_> {
    fn member(&self, key: &str) -> Member {
        match (self.place, key) {
            (Place::Template, "metadata") => Member::Level(Place::Metadata),
            (Place::Template, "spec") => Member::Level(Place::Spec),
            (Place::Metadata, "annotations") => Member::Value,
            (Place::Spec, "volumes") => Member::Value,
            (Place::Spec, "containers") => Member::Containers { init: false },
            (Place::Spec, "initContainers") => Member::Containers { init: true },
            (Place::Container { .. }, "env" | "volumeMounts") => Member::Value,
            _ => Member::Raw,
        }
    }
}

impl<'de, 'r> DeserializeSeed<'de> for Level<'r, 'de> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, 'r> Visitor<'de> for Level<'r, 'de> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut read = Map::new();
        while let Some(key) = map.next_key::<&'de str>()? {
            match self.member(key) {
                Member::Value => {
                    read.insert(key.to_string(), map.next_value()?);
                }
                Member::Level(place) => {
                    once::<A::Error>(&read, key)?;
                    let rest = &mut *self.rest;
                    let value = map.next_value_seed(Level { place, rest })?;
                    read.insert(key.to_string(), value);
                }
                Member::Containers { init } => {
                    once::<A::Error>(&read, key)?;
                    let rest = &mut *self.rest;
                    let value = map.next_value_seed(Containers { init, rest })?;
                    read.insert(key.to_string(), value);
                }
                Member::Raw => {
                    self.rest.push((self.place, key, map.next_value()?));
                }
            }
        }
        Ok(Value::Object(read))
    }
}

/// A level read twice would leave the raw members of the first behind: such a template is
/// compared as a whole tree instead.
fn once<E: serde::de::Error>(read: &Map<String, Value>, key: &str) -> Result<(), E> {
    if read.contains_key(key) {
        return Err(E::custom("a structural member given twice"));
    }
    Ok(())
}

/// `containers` or `initContainers`: a list of container levels.
struct Containers<'r, 'a> {
    init: bool,
    rest: &'r mut Rest<'a>,
}

impl<'de, 'r> DeserializeSeed<'de> for Containers<'r, 'de> {
    type Value = Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, 'r> Visitor<'de> for Containers<'r, 'de> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of containers")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut containers = Vec::new();
        loop {
            let place = Place::Container {
                init: self.init,
                index: containers.len(),
            };
            let level = Level {
                place,
                rest: &mut *self.rest,
            };
            match seq.next_element_seed(level)? {
                Some(container) => containers.push(container),
                None => return Ok(Value::Array(containers)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: &Value) -> Skeleton<'static> {
        let text: &'static str = Box::leak(v.to_string().into_boxed_str());
        Skeleton::read(text).expect("a template of the usual shape")
    }

    #[test]
    fn the_tree_holds_only_what_binding_recognition_reads() {
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
        let skeleton = read(&template);
        assert_eq!(
            skeleton.tree,
            json!({
                "metadata": {"annotations": {"k": "v"}},
                "spec": {
                    "volumes": [{"name": "v"}],
                    "initContainers": [{}],
                    "containers": [{"env": [{"name": "E", "value": "1"}],
                        "volumeMounts": [{"name": "v", "mountPath": "/v"}]}]
                }
            })
        );
        let places: Vec<_> = skeleton.rest.iter().map(|(p, k, _)| (*p, *k)).collect();
        let container = |init, index| Place::Container { init, index };
        assert_eq!(
            places,
            [
                (Place::Metadata, "labels"),
                (Place::Spec, "dnsPolicy"),
                (container(false, 0), "image"),
                (container(false, 0), "name"),
                (container(false, 0), "ports"),
                (container(true, 0), "image"),
                (container(true, 0), "name"),
            ]
        );
    }

    #[test]
    fn raw_members_compare_as_json_in_the_same_place() {
        let a = json!({"spec": {"containers": [{"name": "c", "image": "app:1"}]}});
        let same = r#"{"spec": {"containers": [{"image": "app:1",   "name": "c"}]}}"#;
        let moved = json!({"spec": {"initContainers": [{"name": "c", "image": "app:1"}]}});
        let other = json!({"spec": {"containers": [{"name": "c", "image": "app:2"}]}});
        let skeleton = read(&a);
        assert!(skeleton.rest_equal(&Skeleton::read(same).expect("usual shape")));
        assert!(!skeleton.rest_equal(&read(&moved)));
        assert!(!skeleton.rest_equal(&read(&other)));
    }

    #[test]
    fn a_repeated_raw_member_keeps_its_last_value_as_a_tree_does() {
        let repeated = r#"{"spec": {"dnsPolicy": "a", "containers": [], "dnsPolicy": "b"}}"#;
        let skeleton = Skeleton::read(repeated).expect("usual shape");
        let last = Skeleton::read(r#"{"spec": {"containers": [], "dnsPolicy": "b"}}"#);
        let first = Skeleton::read(r#"{"spec": {"containers": [], "dnsPolicy": "a"}}"#);
        assert!(skeleton.rest_equal(&last.expect("usual shape")));
        assert!(!skeleton.rest_equal(&first.expect("usual shape")));
    }

    #[test]
    fn templates_of_other_shapes_are_not_read() {
        for text in [
            r#"{"metadata": null}"#,
            r#"{"spec": {"containers": {"name": "c"}}}"#,
            r#"{"spec": {"containers": ["c"]}}"#,
            r#"{"spec": {}, "spec": {}}"#,
            r#"{"spec": {"contai\u006eers": []}}"#,
            r#"[]"#,
            r#"{"spec": {}"#,
            r#"{} {}"#,
        ] {
            assert!(Skeleton::read(text).is_none(), "{text}");
        }
        assert!(Skeleton::read(r#"{"metadata": {"annotations": null}}"#).is_some());
    }
}
