//! JSON written straight into the answer's bytes: the answer's members, and the mutated object's
//! values by serde_json around the raw text kept from the request as it is.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::object::{Kept, Object, Part};

/// The SDK's `ValidationResponse`, field for field (`code` is never set).
#[derive(Debug, Default)]
pub struct Answer {
    pub accepted: bool,
    pub message: Option<String>,
    pub audit_annotations: Option<Vec<(&'static str, String)>>,
    pub warnings: Option<Vec<String>>,
}

/// The answer's bytes, with `mutated`, the request's object with its edits, when it is given.
pub fn write_answer(answer: &Answer, mutated: Option<&Object>) -> Vec<u8> {
    // Room for the whole answer at once, so it is seldom copied as it grows: the payload
    // holds the object and the old one.
    let object = mutated.map_or(0, Object::request_len);
    let mut out = Vec::with_capacity(1024 + object);
    let mut members = Members::open(&mut out);
    members.raw("accepted", if answer.accepted { "true" } else { "false" });
    or_null(members.key("message"), &answer.message, |out, m| {
        write_str(out, m)
    });
    members.raw("code", "null");
    or_null(
        members.key("audit_annotations"),
        &answer.audit_annotations,
        |out, audit| {
            let mut map = Members::open(out);
            for (key, value) in audit {
                write_str(map.key(key), value);
            }
            map.close();
        },
    );
    or_null(
        members.key("warnings"),
        &answer.warnings,
        |out, warnings| {
            write_list(out, warnings, |out, warning| write_str(out, warning));
        },
    );
    let written = match mutated {
        Some(object) => write_object(members.key("mutated_object"), object),
        None => {
            members.raw("mutated_object", "null");
            Ok(())
        }
    };
    members.close();
    // Writing JSON to a Vec cannot fail; if it ever did, accept.
    match written {
        Ok(()) => out,
        Err(_) => br#"{"accepted":true}"#.to_vec(),
    }
}

/// Appends the object's JSON with its edits to `out`: keys and values as serde_json writes
/// them, the other members and the pod templates as the request has them.
fn write_object(out: &mut Vec<u8>, object: &Object) -> serde_json::Result<()> {
    match &object.read {
        Value::Object(read) => write_level(out, read, &object.kept, object.source),
        other => {
            write_value(out, other);
            Ok(())
        }
    }
}

/// One object's members as read (and edited), with its other parts put back.
fn write_level<'a>(
    out: &mut Vec<u8>,
    read: &Map<String, Value>,
    kept: &Kept<'a>,
    source: &'a str,
) -> serde_json::Result<()> {
    let mut members = Members::open(out);
    for (key, value) in read {
        match (value, kept.part(key)) {
            (Value::Object(read), Some(Part::Unread(unread))) => {
                let mut map = Members::open(members.key(key));
                for (key, value) in read {
                    map.value(key, value);
                }
                for (key, raw) in unread {
                    map.raw(key, raw.get());
                }
                map.close();
            }
            (Value::Object(read), Some(Part::Within(inner))) => {
                write_level(members.key(key), read, inner, source)?;
            }
            _ => members.value(key, value),
        }
    }
    for (key, raw) in &kept.raw {
        members.raw(key, raw.get());
    }
    for (key, part) in &kept.parts {
        if let Part::Template(node) = part {
            // A template is never edited: its own text when it can be found, which costs a
            // copy instead of a walk.
            match node.text_in(source) {
                Some(text) => members.raw(key, text),
                None => members.serialized(key, node)?,
            }
        }
    }
    members.close();
    Ok(())
}

/// `write` for a value that is there, `null` otherwise.
fn or_null<T>(out: &mut Vec<u8>, value: &Option<T>, write: impl FnOnce(&mut Vec<u8>, &T)) {
    match value {
        Some(value) => write(out, value),
        None => out.extend_from_slice(b"null"),
    }
}

/// A JSON object being written, member by member.
pub(crate) struct Members<'w> {
    out: &'w mut Vec<u8>,
    first: bool,
}

impl<'w> Members<'w> {
    pub fn open(out: &'w mut Vec<u8>) -> Self {
        out.push(b'{');
        Members { out, first: true }
    }

    /// Writes the key of the next member; its value goes to the writer returned.
    pub fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !std::mem::take(&mut self.first) {
            self.out.push(b',');
        }
        write_str(self.out, key);
        self.out.push(b':');
        self.out
    }

    pub fn value(&mut self, key: &str, value: &Value) {
        write_value(self.key(key), value);
    }

    /// A member whose value serialises (a tree that is not a `Value`).
    pub fn serialized(&mut self, key: &str, value: &impl Serialize) -> serde_json::Result<()> {
        serde_json::to_writer(self.key(key), value)
    }

    /// A member whose value is JSON text already.
    pub fn raw(&mut self, key: &str, json: &str) {
        self.key(key).extend_from_slice(json.as_bytes());
    }

    pub fn close(self) {
        self.out.push(b'}');
    }
}

/// A `Value` as serde_json writes it.
fn write_value(out: &mut Vec<u8>, value: &Value) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(out, value);
}

/// A JSON list of `items`, each written by `write`.
fn write_list<T>(out: &mut Vec<u8>, items: &[T], write: impl Fn(&mut Vec<u8>, &T)) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write(out, item);
    }
    out.push(b']');
}

/// A JSON string as serde_json writes it.
fn write_str(out: &mut Vec<u8>, text: &str) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(out, text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn members_are_written_raw_as_values_and_serialised() {
        let mut out = Vec::new();
        let mut members = Members::open(&mut out);
        members.raw("raw", r#"{"kept": 1}"#);
        members.value("v", &json!("é"));
        members.serialized("s", &[1, 2]).expect("serialised");
        members.close();
        assert_eq!(out, r#"{"raw":{"kept": 1},"v":"é","s":[1,2]}"#.as_bytes());
    }

    #[test]
    fn every_answer_reads_back_as_the_sdks_response() {
        use kubewarden_policy_sdk::response::ValidationResponse;
        let read_back = |answer: &Answer, object: Option<&Object>| {
            serde_json::from_slice::<ValidationResponse>(&write_answer(answer, object))
                .expect("the SDK's ValidationResponse")
        };
        let text = r#"{"metadata": {"name": "app", "annotations": {"a\"b": "x"}}, "spec": {"replicas": 1}}"#;
        let plan = crate::ReadPlan {
            values: vec![&["spec", "replicas"]],
            maps: vec![(&["metadata", "annotations"], vec!["restage-gate.io/"])],
            ..Default::default()
        };
        let object = crate::read_object(text, &plan, false).expect("an object");
        let held = Answer {
            accepted: true,
            audit_annotations: Some(vec![
                ("decision", "held".into()),
                ("pending", "+db \"x\"".into()),
            ]),
            warnings: Some(vec!["restage-gate: held\n".into()]),
            ..Answer::default()
        };
        let held = read_back(&held, Some(&object));
        assert!(held.accepted);
        let stored: Value = serde_json::from_str(text).expect("JSON");
        assert_eq!(held.mutated_object, Some(stored));
        assert_eq!(
            held.warnings,
            Some(vec!["restage-gate: held\n".to_string()])
        );
        let audit = held.audit_annotations.expect("audit annotations");
        assert_eq!(audit.len(), 2);
        assert_eq!(audit["pending"], "+db \"x\"");
        let refused = Answer {
            message: Some("refused: \"db\"".into()),
            ..Answer::default()
        };
        let refused = read_back(&refused, None);
        assert!(!refused.accepted);
        assert_eq!(refused.message.as_deref(), Some("refused: \"db\""));
        assert_eq!(refused.mutated_object, None);
        let plain = read_back(
            &Answer {
                accepted: true,
                ..Answer::default()
            },
            None,
        );
        assert!(plain.accepted && plain.message.is_none() && plain.code.is_none());
        assert!(plain.warnings.is_none() && plain.audit_annotations.is_none());
    }
}
