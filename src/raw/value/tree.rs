//! A [`Node`] as the rules read it, a [`Tree`]: an element read when asked for is read when
//! first looked into, and nodes compare as JSON, whatever their text.

use super::node::Node;
use crate::text::same_text;
use crate::tree::Tree;

// `#[inline]` here and on the text comparisons: the rules call these from their own crate for
// every member they look at, where without it the optimiser leaves them calls.
impl Node<'_> {
    /// A lazily read element, read; anything else, or an element that does not read as a
    /// tree, as it is.
    #[inline]
    pub(crate) fn read(&self) -> &Self {
        match self {
            Node::Lazy(raw, shape, read) => read
                .get_or_init(|| Node::shaped(raw, shape).map(Box::new))
                .as_deref()
                .unwrap_or(self),
            _ => self,
        }
    }
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
    #[inline]
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

    #[inline]
    fn as_str(&self) -> Option<&str> {
        match self.read() {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    #[inline]
    fn as_list(&self) -> Option<&[Self]> {
        match self.read() {
            Node::List(items) => Some(items),
            _ => None,
        }
    }

    #[inline]
    fn is_object(&self) -> bool {
        matches!(self.read(), Node::Object(..))
    }

    #[inline]
    fn is_null(&self) -> bool {
        matches!(self.read(), Node::Null)
    }

    /// An element not yet read is looked at as text: without an escape, every string in it
    /// is there as it reads.
    #[inline]
    fn may_contain(&self, text: &str) -> bool {
        match self {
            Node::Lazy(raw, _, read) if read.get().is_none() => {
                has_or_escape(raw.get().as_bytes(), text.as_bytes())
            }
            _ => true,
        }
    }

    /// Equal as JSON text, without reading: a lazily read element against another one.
    #[inline]
    fn identical(&self, other: &Self) -> bool {
        match (self, other) {
            (Node::Lazy(a, ..), Node::Lazy(b, ..)) => same_text(a.get(), b.get()),
            _ => false,
        }
    }

    #[inline]
    fn members(&self) -> impl Iterator<Item = (&str, &Self)> {
        let members = match self.read() {
            Node::Object(members, _) => members.as_slice(),
            _ => &[],
        };
        members.iter().map(|(k, v)| (k.as_ref(), v))
    }
}

/// Whether `needle` occurs in `hay`, or `hay` has an escape (`\`), which may spell it.
pub(super) fn has_or_escape(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memchr(b'\\', hay).is_some() || memchr::memmem::find(hay, needle).is_some()
}
