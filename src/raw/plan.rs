//! What the rules hand down to read: the members of the objects read as values ([`ReadPlan`]),
//! and how deep a pod template is read ([`Shape`], [`Reach`]).

use crate::text::same_text;

/// What the reader makes values of; every other member stays the request's text and is
/// written back as it is. Paths are object keys from the object's top.
#[derive(Debug, Default)]
pub struct ReadPlan {
    /// Members read as JSON values.
    pub values: Vec<&'static [&'static str]>,
    /// Maps read only at the keys starting with one of the prefixes.
    pub maps: Vec<(&'static [&'static str], Vec<&'static str>)>,
    /// Pod templates, each read as deep as its shape says.
    pub templates: Vec<(&'static [&'static str], &'static Shape)>,
    /// Members of the stored object's `status`, each with the members read of the objects
    /// listed in it (none: the whole member).
    pub status: Vec<(&'static str, &'static [&'static str])>,
}

/// How deep a pod template is read, declared by the rules: of an object at this place, which
/// members are read and how (`members`, then `others` for every other key); of a list here,
/// how its elements are read. A member a shape does not read is kept as text: found, and
/// compared as JSON, but never a string, list or object to the rules.
#[derive(Debug)]
pub struct Shape {
    pub members: &'static [(&'static str, Reach)],
    pub others: Reach,
    pub elements: Reach,
}

/// How a value is read.
#[derive(Debug, Clone, Copy)]
pub enum Reach {
    /// Kept as the request's text; compared as JSON, never looked into.
    Text,
    /// Read whole, as a tree holds it.
    Whole,
    /// Read as the shape says.
    Shaped(&'static Shape),
    /// Kept as text, and read as the shape says when first looked into: for the elements of
    /// a list most of which two templates share.
    WhenAsked(&'static Shape),
}

impl Shape {
    /// Everything read.
    pub const WHOLE: Shape = Shape {
        members: &[],
        others: Reach::Whole,
        elements: Reach::Whole,
    };

    /// An object whose `members` are read and whose other members stay text. Anything else
    /// at its place (a list, say) is read whole.
    pub const fn object(members: &'static [(&'static str, Reach)]) -> Shape {
        Shape {
            members,
            others: Reach::Text,
            elements: Reach::Whole,
        }
    }

    /// A list whose elements are read as `elements` says. Anything else at its place (an
    /// object, say) is read whole.
    pub const fn list(elements: Reach) -> Shape {
        Shape {
            members: &[],
            others: Reach::Whole,
            elements,
        }
    }

    /// How member `key` of an object here is read.
    #[inline]
    pub(crate) fn member(&self, key: &str) -> Reach {
        // `same_text`, not `==`: the module's `==` on text compares byte by byte.
        self.members
            .iter()
            .find(|(name, _)| same_text(key, name))
            .map_or(self.others, |&(_, reach)| reach)
    }
}
