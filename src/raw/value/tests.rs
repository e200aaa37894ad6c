//! The reading of a pod template to its shape, its text found in the request, and its
//! comparison as JSON.

use serde::de::DeserializeSeed;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::de::template_seed;
use super::node::Node;
use super::tree::has_or_escape;
use crate::plan::Reach::{Shaped, WhenAsked, Whole};
use crate::plan::Shape;
use crate::tree::Tree;

// A shape for the reader's own tests, laid out like a pod template; what the rules read of
// a template is theirs to declare and test. Every list read when asked for has elements of
// one shape here.
static TEMPLATE: Shape = Shape::object(&[("metadata", Shaped(&METADATA)), ("spec", Shaped(&SPEC))]);
static METADATA: Shape = Shape::object(&[("annotations", Whole)]);
static SPEC: Shape = Shape::object(&[
    ("volumes", Shaped(&WHEN_ASKED)),
    ("containers", Shaped(&CONTAINERS)),
    ("initContainers", Shaped(&CONTAINERS)),
]);
static CONTAINERS: Shape = Shape::list(Shaped(&CONTAINER));
static CONTAINER: Shape = Shape::object(&[
    ("env", Shaped(&WHEN_ASKED)),
    ("volumeMounts", Shaped(&WHEN_ASKED)),
]);
static WHEN_ASKED: Shape = Shape::list(WhenAsked(&ELEMENT));
static ELEMENT: Shape = Shape::object(&[
    ("name", Whole),
    ("value", Whole),
    ("mountPath", Whole),
    ("projected", Shaped(&PROJECTED)),
    ("valueFrom", Shaped(&VALUE_FROM)),
]);
static PROJECTED: Shape = Shape::object(&[("sources", Shaped(&SOURCES))]);
static SOURCES: Shape = Shape::list(Shaped(&SOURCE));
static SOURCE: Shape = Shape::object(&[("secret", Shaped(&NAMED))]);
static VALUE_FROM: Shape = Shape::object(&[
    ("secretKeyRef", Shaped(&NAMED)),
    ("fieldRef", Shaped(&FIELD_REF)),
]);
static NAMED: Shape = Shape::object(&[("name", Whole)]);
static FIELD_REF: Shape = Shape::object(&[("fieldPath", Whole)]);

fn read_text(text: &str) -> Option<Node<'_>> {
    Node::template(text, &TEMPLATE)
}

fn at<'t, 'a>(node: &'t Node<'a>, path: &[&str]) -> Option<&'t Node<'a>> {
    path.iter().try_fold(node, |n, key| n.get(key))
}

fn text_at<'t>(node: &'t Node, path: &[&str]) -> Option<&'t str> {
    at(node, path).and_then(Tree::as_str)
}

fn name_of<'t>(node: &'t Node) -> Option<&'t str> {
    node.get("name")?.as_str()
}

fn read(v: &Value) -> Node<'static> {
    let text: &'static str = Box::leak(v.to_string().into_boxed_str());
    read_text(text).expect("JSON")
}

/// The raw members of a node, with their paths, and the elements read when asked for.
fn raw_paths(node: &Node, path: &str, out: &mut Vec<String>) {
    match node {
        Node::Raw(_) => out.push(path.to_string()),
        Node::Lazy(..) => out.push(format!("{path} when asked")),
        Node::List(items) => {
            for (i, item) in items.iter().enumerate() {
                raw_paths(item, &format!("{path}[{i}]"), out);
            }
        }
        Node::Object(members, _) => {
            for (k, v) in members {
                raw_paths(v, &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// The template of an object's text, read where the text has it, and that text.
fn template_in(object: &str) -> (Node<'_>, &str) {
    let start = object.find("\"template\"").expect("a template") + "\"template\"".len();
    let text = object[start..]
        .trim_start()
        .strip_prefix(':')
        .expect("a member");
    let node = template_seed(&TEMPLATE)
        .deserialize(&mut serde_json::Deserializer::from_str(text))
        .expect("JSON");
    let raw: &RawValue = serde_json::Deserializer::from_str(text)
        .into_iter::<&RawValue>()
        .next()
        .expect("a value")
        .expect("JSON");
    (node, raw.get())
}

#[test]
fn a_template_is_found_as_its_own_text_however_it_is_spaced() {
    let object = json!({"spec": {"template": {
        "metadata": {"annotations": {"k": "v\"quoted\""}, "labels": {"app": "a"}},
        "spec": {"containers": [{"name": "c", "env": [{"name": "E", "value": "1"}]}],
            "volumes": [{"name": "v"}], "hostname": "h"}
    }}, "status": {}});
    for text in [
        object.to_string(),
        serde_json::to_string_pretty(&object).expect("JSON"),
    ] {
        let (node, template) = template_in(&text);
        assert_eq!(node.text_in(&text), Some(template));
    }
}

#[test]
fn a_template_whose_start_cannot_be_told_is_not_found() {
    for text in [
        // An escaped key: not borrowed from the text.
        r#"{"template": {"\u006detadata": {}, "spec": {"hostname": "h"}}}"#,
        // A repeated key, first in the text or anywhere in an object read.
        r#"{"template": {"spec": 1, "metadata": {"name": "m"}, "spec": {"hostname": "h"}}}"#,
        r#"{"template": {"metadata": {"annotations": {"k": "1", "k": "2", "l": "3"}}, "spec": {"hostname": "h"}}}"#,
        r#"{"template": {"metadata": {}, "a": 1, "a": 2, "spec": {"hostname": "h"}}}"#,
        // Nothing in it to tell where it starts.
        r#"{"template": {}}"#,
    ] {
        let (node, _) = template_in(text);
        assert_eq!(node.text_in(text), None, "{text}");
    }
    // Read from another text.
    let text = r#"{"template": {"metadata": {}, "spec": {"hostname": "h"}}}"#;
    let (node, template) = template_in(text);
    assert_eq!(node.text_in(template), Some(template));
    let copy = String::from(text);
    assert_eq!(node.text_in(&copy), None);
}

#[test]
fn a_template_whose_last_piece_is_not_borrowed_is_found_by_reading_to_its_end() {
    for text in [
        r#"{"template": {"spec": {"hostname": "h"}, "metadata": {"annotations": {"k": 1}}}}"#,
        r#"{"template": {"spec": {"containers": []}}}"#,
        r#"{"template": {"spec": {"containers": [{"env": [ ]} ] } }, "status": {}}"#,
        r#"{"template": {"metadata": {"annotations": {"k": "v\"quoted\""}}}}"#,
        r#"{"template": {"metadata": {"annotations": {"k": null}}, "spec": {"volumes": [true]}}}"#,
        r#"{"template": {"spec": {"volumes": [], "containers": [{"name": "c", "env": []}]}}}"#,
    ] {
        let (node, template) = template_in(text);
        assert_eq!(node.text_in(text), Some(template), "{text}");
    }
}

#[test]
fn only_what_the_shape_reads_is_read() {
    let template = json!({
        "metadata": {"labels": {"app": "a"}, "annotations": {"k": "v"}},
        "spec": {
            "volumes": [{"name": "v"}],
            "initContainers": [{"name": "i", "image": "busybox"}],
            "containers": [{"name": "c", "image": "app:1", "env": [{"name": "E", "value": "1"}],
                "volumeMounts": [{"name": "v", "mountPath": "/v"}], "ports": [{"containerPort": 8080}]}],
            "dnsPolicy": "ClusterFirst"
        }
    });
    let node = read(&template);
    let mut raw = Vec::new();
    raw_paths(&node, "", &mut raw);
    assert_eq!(
        raw,
        [
            ".metadata.labels",
            ".spec.containers[0].env[0] when asked",
            ".spec.containers[0].image",
            ".spec.containers[0].name",
            ".spec.containers[0].ports",
            ".spec.containers[0].volumeMounts[0] when asked",
            ".spec.dnsPolicy",
            ".spec.initContainers[0].image",
            ".spec.initContainers[0].name",
            ".spec.volumes[0] when asked",
        ]
    );
    assert_eq!(node.to_value(), Some(template.clone()));
    assert_eq!(serde_json::to_value(&node).ok(), Some(template));
    // Asked for, an element reads as deep as its shape says.
    let volume = at(&node, &["spec", "volumes"])
        .and_then(|v| v.as_list())
        .and_then(|v| v.first());
    assert_eq!(volume.and_then(name_of), Some("v"));
    // Of an unexpected shape, a level is read whole: nothing of it stays raw.
    let odd = read(&json!({"spec": {"containers": {"c": {"image": "app:1"}}}}));
    let mut raw = Vec::new();
    raw_paths(&odd, "", &mut raw);
    assert_eq!(raw, Vec::<String>::new());
}

#[test]
fn an_element_read_when_asked_is_read_only_as_deep_as_its_shape_says() {
    let template = json!({"spec": {
        "volumes": [{"name": "b", "projected": {"defaultMode": 420, "sources": [
            {"secret": {"name": "s", "items": [{"key": "k", "path": "p"}]}},
            {"downwardAPI": {"items": []}}]}}],
        "containers": [{"name": "c",
            "env": [{"name": "E", "value": "1", "valueFrom": {
                "secretKeyRef": {"name": "s", "key": "k"},
                "fieldRef": {"apiVersion": "v1", "fieldPath": "f"}}}],
            "volumeMounts": [{"name": "b", "mountPath": "/b", "readOnly": true}]}]
    }});
    let node = read(&template);
    let element = |path: &[&str]| {
        let list = at(&node, path).and_then(|l| l.as_list());
        let element = list.and_then(|l| l.first()).expect("an element");
        // Asked for: read now.
        assert!(element.is_object());
        let mut raw = Vec::new();
        raw_paths(element.read(), "", &mut raw);
        raw
    };
    assert_eq!(
        element(&["spec", "volumes"]),
        [
            ".projected.defaultMode",
            ".projected.sources[0].secret.items",
            ".projected.sources[1].downwardAPI",
        ]
    );
    let container = at(&node, &["spec", "containers"])
        .and_then(|c| c.as_list()?.first())
        .expect("a container");
    let first = |key: &str| {
        let element = container.get(key)?.as_list()?.first()?;
        element.is_object().then(|| {
            let mut raw = Vec::new();
            raw_paths(element.read(), "", &mut raw);
            raw
        })
    };
    assert_eq!(
        first("env").expect("env"),
        [
            ".valueFrom.fieldRef.apiVersion",
            ".valueFrom.secretKeyRef.key"
        ]
    );
    assert_eq!(first("volumeMounts").expect("mounts"), [".readOnly"]);
    // What stays raw still compares as JSON, whatever its text.
    let respaced = r#"{"spec": {"volumes": [{"name": "b", "projected": {"sources": [
        {"secret": {"items": [{"path": "p", "key": "k"}], "name": "s"}},
        {"downwardAPI": {"items": []}}], "defaultMode": 420}}]}}"#;
    let volumes = |n: &Node<'static>| at(n, &["spec", "volumes"]).cloned();
    let other = read_text(respaced).expect("JSON");
    assert_eq!(volumes(&node), volumes(&other));
    // And differs where it differs as JSON.
    let changed = respaced.replace(r#""path": "p""#, r#""path": "q""#);
    let changed = read_text(Box::leak(changed.into_boxed_str())).expect("JSON");
    assert_ne!(volumes(&node), volumes(&changed));
    assert_eq!(node.to_value(), Some(template));
}

#[test]
fn nodes_compare_as_json_whatever_their_text() {
    let a = read(&json!({"spec": {"containers": [{"name": "c", "image": "app:1"}]}}));
    let same = r#"{"spec": {"containers": [{"image": "app:1",   "name": "c"}]}}"#;
    let moved = read(&json!({"spec": {"initContainers": [{"name": "c", "image": "app:1"}]}}));
    let other = read(&json!({"spec": {"containers": [{"name": "c", "image": "app:2"}]}}));
    assert_eq!(a, read_text(same).expect("JSON"));
    assert_ne!(a, moved);
    assert_ne!(a, other);
    // A list of containers against an object of them.
    let listed = read(&json!({"spec": {"containers": [{"name": "c"}]}}));
    let whole = read(&json!({"spec": {"containers": {"name": "c"}}}));
    assert_ne!(listed, whole);
    assert_eq!(
        read_text(r#"{"x": {"a": 1}}"#).expect("JSON"),
        Node::Object(vec![("x".into(), read(&json!({"a": 1})))], false)
    );
}

#[test]
fn a_repeated_key_keeps_its_last_value_as_a_tree_does() {
    let repeated = r#"{"spec": {"dnsPolicy": "a", "containers": [], "dnsPolicy": "b"},
        "metadata": {"annotations": {"k": "1", "k": "2"}}}"#;
    let node = read_text(repeated).expect("JSON");
    let tree: Value = serde_json::from_str(repeated).expect("JSON");
    assert_eq!(node.to_value(), Some(tree.clone()));
    assert_eq!(node, read(&tree));
    assert_eq!(text_at(&node, &["metadata", "annotations", "k"]), Some("2"));
}

#[test]
fn the_search_finds_the_text_or_an_escape_wherever_it_sits() {
    let needle = b"SERVICE_BINDING_ROOT";
    let naive = |hay: &[u8]| hay.contains(&b'\\') || hay.windows(needle.len()).any(|w| w == needle);
    for insert in [&needle[..], b"\\", b"SERVICE_BINDING_ROO", b"S", b"SS"] {
        for at in 0..30 {
            for len in 0..60 {
                let mut hay = vec![b'x'; len];
                if at <= len {
                    hay.splice(at..at, insert.iter().copied());
                }
                hay.truncate(len);
                assert_eq!(
                    has_or_escape(&hay, needle),
                    naive(&hay),
                    "{:?}",
                    String::from_utf8_lossy(&hay)
                );
            }
        }
    }
    // A needle longer than the 255 a shift is capped at, found and nearly found.
    let long: Vec<u8> = (0..300u16).map(|i| b'a' + (i % 26) as u8).collect();
    let mut near = long.clone();
    near[299] = b'#';
    for at in [0, 1, 7, 255, 256, 400] {
        for insert in [&long, &near] {
            let mut hay = vec![b'x'; 700];
            hay.splice(at..at, insert.iter().copied());
            let found = hay.windows(long.len()).any(|w| w == long);
            assert_eq!(has_or_escape(&hay, &long), found, "at {at}");
        }
    }
}

#[test]
fn an_element_not_yet_read_may_contain_only_what_its_text_can_hold() {
    let template = r#"{"spec": {"containers": [{"env": [
        {"name": "PORT", "value": "8080"},
        {"name": "SERVICE_BINDING_ROO\u0054", "value": "/b"},
        {"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}]}]}}"#;
    let node = read_text(template).expect("JSON");
    let env = at(&node, &["spec", "containers"])
        .and_then(|c| c.as_list()?.first()?.get("env")?.as_list())
        .expect("env");
    let root = "SERVICE_BINDING_ROOT";
    // No such text and no escape: it cannot be there.
    assert!(!env[0].may_contain(root));
    // An escape may spell it.
    assert!(env[1].may_contain(root));
    assert_eq!(name_of(&env[1]), Some(root));
    assert!(env[2].may_contain(root));
    // Once read, it is asked as a tree.
    assert_eq!(name_of(&env[0]), Some("PORT"));
    assert!(env[0].may_contain(root));
}

#[test]
fn templates_of_any_shape_read_as_their_trees() {
    for text in [
        r#"{"metadata": null}"#,
        r#"{"spec": {"containers": {"name": "c"}}}"#,
        r#"{"spec": {"containers": ["c", 1, null, true, -2.5]}}"#,
        r#"{"spec": {}, "spec": {"volumes": []}}"#,
        r#"{"spec": {"contai\u006eers": [{"env": [{"name": "\u0041"}]}]}}"#,
        r#"[]"#,
        r#""text""#,
    ] {
        let node = read_text(text).expect(text);
        let tree: Value = serde_json::from_str(text).expect(text);
        assert_eq!(node.to_value(), Some(tree.clone()), "{text}");
        assert_eq!(serde_json::to_value(&node).ok(), Some(tree), "{text}");
    }
    for text in [
        r#"{"spec": {}"#,
        r#"{} {}"#,
        r#"{"metadata": {"annotations": {"k": 1e400}}}"#,
    ] {
        assert!(read_text(text).is_none(), "{text}");
    }
}
