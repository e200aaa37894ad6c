//! A [`Node`] written as the JSON it holds: raw members as the request has them.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::node::Node;

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
