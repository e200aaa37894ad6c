//! A workload object as the reader leaves it: the members the rules' [`ReadPlan`](crate::ReadPlan)
//! names as JSON values, for the rules to read and edit, and every other member kept as the
//! request's text (`managedFields`, often most of the metadata, among them), by where it sits;
//! its pod templates read as deep as their shapes say (`value/`). Read by `de.rs`, written
//! back by `writer.rs`.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::value::Node;

#[derive(Debug, Default)]
pub struct Object<'a> {
    /// What the plan reads, as values; `Null` when the object is absent or not a JSON object.
    /// Edits are made here.
    pub read: Value,
    /// The rest of the object, by where it sits.
    pub(crate) kept: Kept<'a>,
    /// The text the object was read from (the request): a template is written back as its own
    /// text found there.
    pub(crate) source: &'a str,
}

/// The members of one object the plan does not read as values.
#[derive(Debug, Default)]
pub(crate) struct Kept<'a> {
    /// Members nobody reads, raw.
    pub(crate) raw: RawMembers<'a>,
    /// Members read otherwise, by the plan's key.
    pub(crate) parts: Vec<(&'static str, Part<'a>)>,
}

#[derive(Debug)]
pub(crate) enum Part<'a> {
    /// A pod template.
    Template(Node<'a>),
    /// The keys of a map read in part that were not read, raw.
    Unread(RawMembers<'a>),
    /// An object on the way to something read: its own parts.
    Within(Kept<'a>),
}

/// Members kept as the request has them: read into a list, then sorted once, a repeated key
/// keeping its last value (`as_in_a_tree`), which costs a pass where a map costs a search and
/// a node per member.
pub(crate) type RawMembers<'a> = Vec<(Cow<'a, str>, &'a RawValue)>;

impl<'a> Kept<'a> {
    pub(crate) fn part(&self, key: &str) -> Option<&Part<'a>> {
        self.parts
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, part)| part)
    }

    /// A repeated key keeps its last value, every part of it, as a tree does.
    pub(crate) fn set(&mut self, key: &'static str, part: Part<'a>) {
        self.parts.retain(|(k, _)| *k != key);
        self.parts.push((key, part));
    }
}

impl<'a> Object<'a> {
    /// The pod template at `path`, read as far as its shape says.
    pub fn template(&self, path: &[&str]) -> Option<&Node<'a>> {
        let (last, within) = path.split_last()?;
        let mut kept = &self.kept;
        for key in within {
            match kept.part(key)? {
                Part::Within(inner) => kept = inner,
                _ => return None,
            }
        }
        match kept.part(last)? {
            Part::Template(node) => Some(node),
            _ => None,
        }
    }

    /// The object, knowing `source` is the text it was read from.
    pub fn read_from(self, source: &'a str) -> Self {
        Object { source, ..self }
    }

    /// The length of the text the object was read from (the request, both objects in it).
    pub fn request_len(&self) -> usize {
        self.source.len()
    }
}
