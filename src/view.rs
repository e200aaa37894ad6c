//! Reading and editing the typed view of a request: values at paths of object keys, in a
//! `serde_json::Value` or in any [`Tree`] the reader hands over.

use serde_json::{Map, Value};

use raw::Tree;

/// The value at a path of object keys. `Value::pointer` would allocate for every segment, on
/// the hot path of every request.
pub fn at<'a, T: Tree>(value: &'a T, path: &[&str]) -> Option<&'a T> {
    path.iter().try_fold(value, |v, key| v.get(key))
}

/// The string at a path of object keys.
pub fn text_at<'a, T: Tree>(value: &'a T, path: &[&str]) -> Option<&'a str> {
    at(value, path).and_then(T::as_str)
}

/// The elements of a JSON list; anything else (absent, null, garbage) has none.
pub fn items<T: Tree>(v: Option<&T>) -> std::slice::Iter<'_, T> {
    v.and_then(T::as_list).unwrap_or_default().iter()
}

/// `name` of a list element (a volume, a mount, an env var, a container).
pub fn name_of<T: Tree>(v: &T) -> Option<&str> {
    v.get("name")?.as_str()
}

/// A request whose object cannot take an edit (`metadata` or one of its maps is not an object).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unwritable(pub String);

/// The map at `path`. The last map is created when absent or null (a workload without
/// labels); the ones before it must be there, or the object is not readable.
pub fn map_at<'a>(
    object: &'a mut Value,
    path: &[&str],
) -> Result<&'a mut Map<String, Value>, Unwritable> {
    let mut here = object;
    for (depth, key) in path.iter().enumerate() {
        let Value::Object(map) = here else {
            return Err(not_an_object(&path[..depth]));
        };
        let last = depth + 1 == path.len() && depth > 0;
        if !last && !map.contains_key(*key) {
            return Err(Unwritable(format!(
                "{} is missing",
                path[..=depth].join(".")
            )));
        }
        let next = map.entry(*key).or_insert(Value::Null);
        if next.is_null() && last {
            *next = Value::Object(Map::new());
        }
        here = next;
    }
    match here {
        Value::Object(map) => Ok(map),
        _ => Err(not_an_object(path)),
    }
}

/// The map at `path` when it exists; there is nothing to remove from a map that is not there.
pub fn existing_map_at<'a>(
    object: &'a mut Value,
    path: &[&str],
) -> Result<Option<&'a mut Map<String, Value>>, Unwritable> {
    let mut here = object;
    for key in path {
        match here.get_mut(*key) {
            Some(next) => here = next,
            None => return Ok(None),
        }
    }
    match here {
        Value::Null => Ok(None),
        Value::Object(map) => Ok(Some(map)),
        _ => Err(not_an_object(path)),
    }
}

/// Sets `value` at `path` (the last key in the map before it). Returns whether it changed.
pub fn set_at(object: &mut Value, path: &[&str], value: Value) -> Result<bool, Unwritable> {
    let Some((last, parent)) = path.split_last() else {
        return Err(Unwritable("an empty path".into()));
    };
    Ok(set(map_at(object, parent)?, last, value))
}

/// Inserts `key: value` unless it is there already. Returns whether it changed.
pub fn set(map: &mut Map<String, Value>, key: &str, value: Value) -> bool {
    if map.get(key) == Some(&value) {
        return false;
    }
    map.insert(key.to_string(), value);
    true
}

fn not_an_object(path: &[&str]) -> Unwritable {
    let at = if path.is_empty() {
        "the object".to_string()
    } else {
        path.join(".")
    };
    Unwritable(format!("{at} is not a JSON object"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn map_at_creates_only_the_last_map() {
        let mut object = json!({"metadata": {"name": "app"}});
        map_at(&mut object, &["metadata", "labels"]).expect("created");
        assert_eq!(object, json!({"metadata": {"name": "app", "labels": {}}}));
        let mut object = json!({"metadata": {"labels": null}});
        map_at(&mut object, &["metadata", "labels"]).expect("null is absent");
        assert_eq!(
            map_at(&mut json!({"spec": {}}), &["metadata", "labels"]),
            Err(Unwritable("metadata is missing".into()))
        );
        assert_eq!(
            map_at(
                &mut json!({"metadata": {"labels": "oops"}}),
                &["metadata", "labels"]
            ),
            Err(Unwritable("metadata.labels is not a JSON object".into()))
        );
        assert_eq!(
            map_at(&mut json!({"metadata": 3}), &["metadata", "labels"]),
            Err(Unwritable("metadata is not a JSON object".into()))
        );
        assert!(map_at(&mut json!([]), &["metadata", "labels"]).is_err());
    }

    #[test]
    fn existing_map_at_finds_nothing_to_remove_where_there_is_no_map() {
        assert_eq!(
            existing_map_at(&mut json!({}), &["metadata", "labels"]),
            Ok(None)
        );
        assert_eq!(
            existing_map_at(
                &mut json!({"metadata": {"labels": null}}),
                &["metadata", "labels"]
            ),
            Ok(None)
        );
        assert!(existing_map_at(
            &mut json!({"metadata": {"labels": 1}}),
            &["metadata", "labels"]
        )
        .is_err());
    }

    #[test]
    fn set_at_reports_whether_anything_changed() {
        let mut object = json!({"spec": {"paused": false}});
        assert_eq!(
            set_at(&mut object, &["spec", "paused"], json!(true)),
            Ok(true)
        );
        assert_eq!(
            set_at(&mut object, &["spec", "paused"], json!(true)),
            Ok(false)
        );
        assert_eq!(object, json!({"spec": {"paused": true}}));
    }
}
