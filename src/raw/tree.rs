//! The typed view the rules read JSON through: [`Tree`], which a `serde_json::Value` and a pod
//! template as the reader holds it (`value::Node`) both are.

use serde_json::Value;

/// A JSON tree as the rules read it: a `serde_json::Value`, or a pod template as the reader
/// holds it. Equality is equality as JSON.
pub trait Tree: PartialEq + Sized {
    /// A member of an object.
    fn get(&self, key: &str) -> Option<&Self>;
    fn as_str(&self) -> Option<&str>;
    fn as_list(&self) -> Option<&[Self]>;
    fn is_object(&self) -> bool;
    fn is_null(&self) -> bool;
    /// An object's members in key order, each key once; nothing for anything else.
    fn members(&self) -> impl Iterator<Item = (&str, &Self)>;
    /// `false` only where no string in this JSON (key or value) can be `text`: a shortcut
    /// past reading what cannot match.
    fn may_contain(&self, text: &str) -> bool {
        let _ = text;
        true
    }
    /// Equal, told without reading either side; `false` means "not known to be", not
    /// "different". Cheap enough to run over every element of a list.
    fn identical(&self, other: &Self) -> bool;
}

impl Tree for Value {
    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object()?.get(key)
    }

    fn as_str(&self) -> Option<&str> {
        Value::as_str(self)
    }

    fn as_list(&self) -> Option<&[Self]> {
        self.as_array().map(Vec::as_slice)
    }

    fn is_object(&self) -> bool {
        Value::is_object(self)
    }

    fn is_null(&self) -> bool {
        Value::is_null(self)
    }

    fn members(&self) -> impl Iterator<Item = (&str, &Self)> {
        self.as_object()
            .into_iter()
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v)))
    }

    fn identical(&self, other: &Self) -> bool {
        self == other
    }
}
