//! Text compared as the reader needs it.

/// An object's members as a tree holds them: sorted by key, a repeated key keeping its last
/// value. Returns whether a key repeated. Stable, so of members with the same key the last
/// read stays last; members read in order (as the API server writes maps) cost one pass.
pub fn as_in_a_tree<K: AsRef<str>, V>(members: &mut Vec<(K, V)>) -> bool {
    members.sort_by(|(a, _), (b, _)| text_order(a.as_ref(), b.as_ref()));
    let read = members.len();
    members.dedup_by(|later, kept| {
        let same = same_text(later.0.as_ref(), kept.0.as_ref());
        if same {
            std::mem::swap(later, kept);
        }
        same
    });
    members.len() < read
}

/// Equal text, compared eight bytes at a time: wasm32's `memcmp` compares byte by byte, and
/// the text both templates share is kilobytes long. Keys are short: the call `==` makes into
/// `memcmp` costs more than comparing them here.
#[inline]
pub fn same_text(a: &str, b: &str) -> bool {
    same_bytes(a.as_bytes(), b.as_bytes())
}

#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (xs, ys) = (a.chunks_exact(8), b.chunks_exact(8));
    let tails = xs.remainder().iter().zip(ys.remainder());
    xs.zip(ys).all(|(x, y)| word(x) == word(y)) && tails.into_iter().all(|(x, y)| x == y)
}

/// Whether `text` starts with `prefix`, compared as `same_text` does.
#[inline]
pub fn starts_with_text(text: &str, prefix: &str) -> bool {
    let start = text.as_bytes().get(..prefix.len());
    start.is_some_and(|start| same_bytes(start, prefix.as_bytes()))
}

/// `str`'s order (byte by byte), passing over the bytes both share eight at a time: keys
/// compared while sorting often share long prefixes (annotation keys under one domain).
#[inline]
pub fn text_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let common = a.len().min(b.len());
    let shared = a[..common]
        .chunks_exact(8)
        .zip(b[..common].chunks_exact(8))
        .take_while(|(x, y)| word(x) == word(y))
        .count()
        * 8;
    // The first difference is within the next eight bytes, or one text is a prefix.
    match a[shared..].iter().zip(&b[shared..]).find(|(x, y)| x != y) {
        Some((x, y)) => x.cmp(y),
        None => a.len().cmp(&b.len()),
    }
}

/// Eight bytes as one word, the first the lowest (zero if fewer are given; callers give
/// `chunks_exact(8)`).
#[inline]
fn word(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes.try_into().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_compares_as_str_does() {
        let text = "projector.servicebinding.io/secret-\u{e9}0123456789";
        let mut texts: Vec<String> = (0..=text.len())
            .filter_map(|len| text.get(..len))
            .map(str::to_string)
            .collect();
        // One byte changed anywhere, up or down.
        for at in 0..text.len() {
            for by in [b'#', b'~'] {
                let mut changed = text.as_bytes().to_vec();
                changed[at] = by;
                texts.push(String::from_utf8_lossy(&changed).into_owned());
            }
        }
        for a in &texts {
            for b in &texts {
                assert_eq!(text_order(a, b), a.cmp(b), "{a} {b}");
                assert_eq!(same_text(a, b), a == b, "{a} {b}");
            }
        }
    }

    #[test]
    fn starts_with_text_is_starts_with() {
        let text = "projector.servicebinding.io/secret-\u{e9}";
        for len in 0..=text.len() + 1 {
            let prefix = String::from_utf8_lossy(&text.as_bytes()[..len.min(text.len())]);
            for candidate in [text, "projector.", "", "\u{e9}"] {
                assert_eq!(
                    starts_with_text(candidate, &prefix),
                    candidate.starts_with(prefix.as_ref()),
                    "{candidate} {prefix}"
                );
            }
        }
    }
}
