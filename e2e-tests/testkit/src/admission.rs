//! Admission requests as the API server sends them, for any kind the policy sees.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{json, Value};

/// An admission request for the workload in `new` (or `old`): its group and kind come from the
/// object's `apiVersion` and `kind`; without an `apiVersion`, the group of the kind the policy
/// holds by that name.
pub fn request(operation: &str, old: &Value, new: &Value) -> Value {
    let field = |key: &str| [new, old].iter().find_map(|o| o[key].as_str());
    let kind = field("kind").unwrap_or_default();
    // `group/v1` → `group`; the core group (`v1`) is ""
    let group = field("apiVersion").map_or_else(
        || {
            crate::lookup::every()
                .into_iter()
                .find(|d| d.name() == kind)
                .map_or("", |d| d.group())
        },
        |v| v.rsplit_once('/').map_or("", |(g, _)| g),
    );
    request_for(group, kind, operation, old, new)
}

/// An admission request for `group`/`kind`, whatever the objects say.
pub fn request_for(group: &str, kind: &str, operation: &str, old: &Value, new: &Value) -> Value {
    let meta = |key: &str| {
        [new, old]
            .iter()
            .find_map(|o| o["metadata"][key].as_str())
            .unwrap_or_default()
            .to_string()
    };
    let declared = restage_gate::workload::of(group, kind).map(|w| w.declared());
    let version = declared.map_or("v1", |k| k.version);
    let resource = declared.map_or_else(
        || format!("{}s", kind.to_lowercase()),
        |k| k.resource.into(),
    );
    let gvk = json!({"group": group, "version": version, "kind": kind});
    let resource = json!({"group": group, "version": version, "resource": resource});
    json!({
        "uid": format!("restage-gate-e2e-{}", operation.to_ascii_lowercase()),
        "kind": gvk,
        "resource": resource,
        "requestKind": gvk,
        "requestResource": resource,
        "name": meta("name"),
        "namespace": meta("namespace"),
        "operation": operation,
        "userInfo": {"username": "system:serviceaccount:cf:korifi-controllers-controller-manager",
            "groups": ["system:serviceaccounts", "system:authenticated"]},
        "object": new,
        "oldObject": old,
        "dryRun": false,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": format!("{}Options", title(operation))},
    })
}

/// What Kubewarden hands a policy's `validate`: the settings and the request.
pub fn validation_request(settings: &Value, request: &Value) -> Value {
    json!({"settings": settings, "request": request})
}

/// An AdmissionReview around a request, as the API server sends it.
pub fn review(request: &Value) -> Value {
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

/// The `mutated_object` of a policy's answer, as the text the policy wrote.
pub fn mutated_object_text(answer: &[u8]) -> Option<String> {
    let members: BTreeMap<String, &RawValue> = serde_json::from_slice(answer).ok()?;
    let object = members.get("mutated_object")?.get();
    (object != "null").then(|| object.to_string())
}

/// The text of the member at `path` in JSON text, as it stands there.
pub fn member_text(json: &str, path: &[&str]) -> Option<String> {
    let Some((first, rest)) = path.split_first() else {
        return Some(json.to_string());
    };
    let members: BTreeMap<String, &RawValue> = serde_json::from_str(json).ok()?;
    member_text(members.get(*first)?.get(), rest)
}

/// The first key an object repeats, at any depth, in JSON text: it parses, but readers may
/// take either value. `None` when no key repeats (or the text is not JSON).
pub fn repeated_key(json: &str) -> Option<String> {
    let mut deserializer = serde_json::Deserializer::from_str(json);
    Repeats.deserialize(&mut deserializer).ok().flatten()
}

struct Repeats;

impl<'de> DeserializeSeed<'de> for Repeats {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Repeats {
    type Value = Option<String>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("JSON")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut keys = BTreeSet::new();
        let mut repeated = None;
        while let Some(key) = map.next_key::<String>()? {
            let inner = map.next_value_seed(Repeats)?;
            if !keys.insert(key.clone()) {
                repeated = repeated.or(Some(key));
            }
            repeated = repeated.or(inner);
        }
        Ok(repeated)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut repeated = None;
        while let Some(inner) = seq.next_element_seed(Repeats)? {
            repeated = repeated.or(inner);
        }
        Ok(repeated)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

fn title(operation: &str) -> String {
    let lower = operation.to_ascii_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lookup::unbound;

    #[test]
    fn repeated_keys_are_found_at_any_depth() {
        assert_eq!(
            repeated_key(r#"{"a": 1, "b": {"c": [{"d": 1, "d": 2}]}}"#),
            Some("d".into())
        );
        assert_eq!(repeated_key(r#"{"a": 1, "a": 1}"#), Some("a".into()));
        assert_eq!(repeated_key(r#"{"a": {"b": 1}, "b": [{"a": 1}]}"#), None);
    }

    #[test]
    fn the_mutated_object_is_read_as_written() {
        let answer = br#"{"accepted": true, "mutated_object": {"k": 1,  "k": 2}}"#;
        assert_eq!(
            mutated_object_text(answer).as_deref(),
            Some(r#"{"k": 1,  "k": 2}"#)
        );
        assert_eq!(
            mutated_object_text(br#"{"accepted": true, "mutated_object": null}"#),
            None
        );
        assert_eq!(mutated_object_text(br#"{"accepted": true}"#), None);
    }

    #[test]
    fn a_request_names_the_kind_and_resource_of_its_object() {
        for w in restage_gate::workload::kinds() {
            let (declared, kind) = (w.declared(), w.kind());
            let object = unbound(w);
            let r = request("UPDATE", &object, &object);
            assert_eq!(
                r["kind"],
                json!({"group": declared.group, "version": declared.version, "kind": kind})
            );
            assert_eq!(r["resource"]["resource"], declared.resource);
            assert_eq!(r["name"], object["metadata"]["name"]);
            assert_eq!(r["options"]["kind"], "UpdateOptions");
        }
        for d in crate::lookup::every() {
            let r = request("DELETE", &d.fixture(), &Value::Null);
            assert_eq!(r["kind"]["kind"], d.name());
        }
    }
}
