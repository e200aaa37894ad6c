//! Where a value read from the request sits in the request's text: a pod template, never
//! edited, is written back as its own text, found from the addresses of the pieces of the
//! request its nodes borrow, without reading it again.

use std::borrow::Cow;
use std::ops::Range;

use serde_json::value::RawValue;

use crate::value::Node;

impl<'a> Node<'a> {
    /// This node's own text, when `source` is the text it was read from and the text holds
    /// what the node does: no key repeats in an object read, and where the text starts can be
    /// told from the pieces of `source` the node borrows. Of an object, the first member in
    /// the text is the key with the smallest address, the last the one with the largest; of a
    /// list, its first and last elements; each level down to the first and the last piece.
    /// Where the last piece is not borrowed (a number, an escaped string, an empty list), the
    /// text is read on from the start to find the end. `None` when the start cannot be told:
    /// an escaped key, an empty object, a list whose first element is not borrowed. from the start to find the end. `None` when the start cannot be told:
    /// an escaped key, an empty object, a list whose first element is not borrowed.
    pub(crate) fn text_in(&self, source: &'a str) -> Option<&'a str> {
        if self.repeats() {
            return None;
        }
        source.get(self.span(source)?)
    }

    /// Whether a key repeats in an object read in this node (an element read when asked for
    /// is text, and copied as such).
    fn repeats(&self) -> bool {
        match self {
            Node::Object(members, repeated) => {
                *repeated || members.iter().any(|(_, v)| v.repeats())
            }
            Node::List(items) => items.iter().any(Node::repeats),
            _ => false,
        }
    }

    fn span(&self, text: &str) -> Option<Range<usize>> {
        let source = text.as_bytes();
        match self {
            Node::Raw(raw) | Node::Lazy(raw, ..) => within(source, raw.get()),
            Node::Str(Cow::Borrowed(piece)) => {
                let inner = within(source, piece)?;
                let quoted = inner.start.checked_sub(1)?..inner.end + 1;
                (source.get(quoted.start) == Some(&b'"') && source.get(inner.end) == Some(&b'"'))
                    .then_some(quoted)
            }
            Node::List(items) => {
                let start = opened(source, items.first()?.span(text)?.start, b'[')?;
                let end = match items.last()?.span(text) {
                    Some(last) => closed(source, last.end, b']')?,
                    None => value_end(text, start)?,
                };
                Some(start..end)
            }
            Node::Object(members, _) => {
                let mut keys = members.iter().map(|(key, value)| match key {
                    Cow::Borrowed(key) => Some((within(source, key)?.start, value)),
                    Cow::Owned(_) => None,
                });
                let first = keys.next()??;
                let (mut start, mut last) = (first.0, first);
                for key in keys {
                    let key = key?;
                    start = start.min(key.0);
                    last = if key.0 > last.0 { key } else { last };
                }
                let quote = start.checked_sub(1).filter(|&q| source[q] == b'"')?;
                let start = opened(source, quote, b'{')?;
                let end = match last.1.span(text) {
                    Some(last) => closed(source, last.end, b'}')?,
                    None => value_end(text, start)?,
                };
                Some(start..end)
            }
            _ => None,
        }
    }
}

/// The end of the JSON value that starts at `start`, read through: a value whose last piece
/// is not borrowed from the text, so that only reading tells where it ends.
fn value_end(text: &str, start: usize) -> Option<usize> {
    let rest = text.get(start..)?;
    let value = serde_json::Deserializer::from_str(rest)
        .into_iter::<&RawValue>()
        .next()?
        .ok()?;
    let read = within(text.as_bytes(), value.get())?;
    (read.start == start).then_some(read.end)
}

/// Where `part` sits in `source`, if it is a piece of it.
fn within(source: &[u8], part: &str) -> Option<Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(source.as_ptr() as usize)?;
    let end = start.checked_add(part.len())?;
    (end <= source.len()).then_some(start..end)
}

/// The position of `open` just before `at`, past whitespace.
fn opened(source: &[u8], at: usize, open: u8) -> Option<usize> {
    let i = source
        .get(..at)?
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())?;
    (source[i] == open).then_some(i)
}

/// The position after `close` from `at` on, past whitespace.
fn closed(source: &[u8], at: usize, close: u8) -> Option<usize> {
    let i = at
        + source
            .get(at..)?
            .iter()
            .position(|b| !b.is_ascii_whitespace())?;
    (source[i] == close).then_some(i + 1)
}
