//! Properties over generated StatefulSets and Deployments: mutations stay confined to the
//! control and the policy's own markers, evaluating the output again changes nothing, release
//! restores what was remembered, binding artefacts are recognised both ways, any other template
//! change is a restage, no change that stops mounting a secret is refused or left paused, an
//! owner's resume is never paused again, the object written from the request's raw members is
//! the tree-based edit, and templates compared as raw JSON classify as whole trees do.

use proptest::prelude::*;
use serde_json::{json, Value};

use restage_gate_testkit::admission::{
    member_text, mutated_object_text, repeated_key, request, validation_request,
};
use restage_gate_testkit::descriptor::Descriptor;
use restage_gate_testkit::fixtures::fixture;
use restage_gate_testkit::hold::{held_remembering, is_marker, kind_of};
use restage_gate_testkit::korifi::with_managed_fields;
use restage_gate_testkit::lookup;
use restage_gate_testkit::pod::mounted_secrets;
use restage_gate_testkit::projector::{project, unproject, Binding};
use restage_gate_testkit::secret_volume;

use super::{changed_paths, EARLIER, NOW};
use restage_gate::evaluate;
use restage_gate::internals as response;
use restage_gate::internals::compare;
use restage_gate::internals::Settings;
use restage_gate::internals::{decide, Admission};
use restage_gate::internals::{Node, Reach, Shape};
use restage_gate::markers;
use restage_gate::template::artefacts::ArtefactRules;
use restage_gate::template::artefacts::TEMPLATE_SHAPE;
use restage_gate::template::classify::{classify, ChangeKind};

/// (name, env, image) of a generated container.
type ContainerSpec = (String, Vec<(String, String)>, String);

fn container(name: String, env: Vec<(String, String)>, image: String) -> Value {
    let env: Vec<Value> = env
        .into_iter()
        .map(|(n, v)| json!({"name": n, "value": v}))
        .collect();
    json!({"name": name, "image": image, "env": env})
}

prop_compose! {
    fn env()(vars in prop::collection::vec(("[A-Z]{1,6}", "[a-z0-9]{0,6}"), 0..4)) -> Vec<(String, String)> {
        vars
    }
}

prop_compose! {
    /// An app StatefulSet without bindings: containers, init containers, app volumes and
    /// annotations of its own, and a strategy.
    fn app()(
        containers in prop::collection::vec(("[a-z]{1,8}", env(), "[a-z]{1,5}:[0-9]"), 1..4),
        inits in prop::collection::vec(("[a-z]{1,8}", env(), "[a-z]{1,5}:[0-9]"), 0..3),
        volumes in prop::collection::vec("[a-z]{1,8}", 0..3),
        annotations in prop::collection::btree_map("[a-z]{1,5}\\.io/[a-z]{1,5}", "[a-z0-9]{0,5}", 0..3),
        replicas in 1u32..5,
        strategy in prop_oneof![
            Just(json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})),
            Just(json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "partition": 0}})),
            Just(json!({"type": "RollingUpdate"})),
        ],
        managed in any::<bool>(),
        // The workload's own: read only at the markers' prefix, the rest written back raw.
        own in prop::collection::btree_map(
            prop_oneof![Just("restage-gate.io/x".to_string()), "[a-z]{1,5}\\.io/[a-z]{1,5}"],
            prop_oneof![Just(json!("{\"a\":[1]}")), Just(json!(null)), "[a-z0-9]{0,5}".prop_map(|v| json!(v))],
            0..3,
        ),
    ) -> Value {
        let to_containers = |list: Vec<ContainerSpec>, prefix: &str| -> Vec<Value> {
            list.into_iter().enumerate().map(|(i, (n, e, img))| container(format!("{prefix}{i}-{n}"), e, img)).collect()
        };
        let mut spec = json!({"containers": to_containers(containers, "c")});
        if !inits.is_empty() {
            spec["initContainers"] = json!(to_containers(inits, "i"));
        }
        if !volumes.is_empty() {
            let v: Vec<Value> = volumes.iter().enumerate().map(|(i, n)| json!({"name": format!("v{i}-{n}"), "emptyDir": {}})).collect();
            spec["volumes"] = json!(v);
        }
        let korifi = korifi_kind();
        let mut app = json!({
            "apiVersion": korifi.api_version(), "kind": korifi.name(),
            "metadata": {"name": "app", "namespace": "space", "generation": 1, "labels": {"app": "x"}},
            "spec": {"replicas": replicas, "updateStrategy": strategy,
                "template": {"metadata": {"annotations": annotations}, "spec": spec}},
        });
        // As the API server sends it: the policy keeps it raw and must write it back as it was.
        if managed {
            app = with_managed_fields(app);
        }
        if !own.is_empty() {
            app["metadata"]["annotations"] = json!(own);
        }
        app
    }
}

type Kind = &'static dyn Descriptor;

/// The kind Korifi runs apps as (a StatefulSet), which the generated app is.
fn korifi_kind() -> Kind {
    lookup::of_fixture(&restage_gate_testkit::korifi::unbound())
}

/// A kind held by a pause (a Deployment): its control is a boolean.
fn paused_kind() -> Kind {
    lookup::every()
        .into_iter()
        .find(|d| d.held_control().is_boolean())
        .expect("a kind held by a pause")
}

/// A generated app as a StatefulSet or as a Deployment (which has `paused` where a
/// StatefulSet has its strategy).
fn workload() -> impl Strategy<Value = Value> {
    (app(), any::<bool>()).prop_map(|(mut app, paused)| {
        if paused {
            let kind = paused_kind();
            app["apiVersion"] = json!(kind.api_version());
            app["kind"] = json!(kind.name());
            if let Some(spec) = app["spec"].as_object_mut() {
                spec.remove("updateStrategy");
            }
        }
        app
    })
}

/// The control a hold of `app` replaces, as the API server has it (a pause the API server
/// defaults when absent).
fn control_of(app: &Value) -> Value {
    let kind = lookup::of_fixture(app);
    let control = app.pointer(&kind.control_path()).cloned();
    match control {
        None if kind.held_control().is_boolean() => kind.default_control(),
        other => other.unwrap_or(Value::Null),
    }
}

/// A binding mounted as a plain `secret` volume, recognised by the settings' extra prefix.
#[derive(Debug, Clone, Copy)]
enum SecretVolume {
    Kept,
    Added,
    Removed,
    Switched,
}

fn secret_volume_change() -> impl Strategy<Value = Option<SecretVolume>> {
    prop::option::of(prop_oneof![
        Just(SecretVolume::Kept),
        Just(SecretVolume::Added),
        Just(SecretVolume::Removed),
        Just(SecretVolume::Switched),
    ])
}

/// The artefact rules of `settings`: the built-in ones and the extra volume prefix.
fn extra_rules() -> ArtefactRules {
    ArtefactRules {
        extra_volume_prefixes: vec![secret_volume::PREFIX.into()],
        ..ArtefactRules::default()
    }
}

/// The settings every generated request is evaluated with: the default mode, or reject.
fn settings(reject: bool) -> Value {
    secret_volume::settings(if reject { "reject" } else { "defer" })
}

fn binding(i: u8, rotated: bool) -> Binding {
    let mut b = Binding::new(
        &format!("{i:02x}000000-1d4a-4e8b-9c6f-0a1b2c3d4e5f"),
        &format!("svc-{i}"),
        &format!("svc-{i}-secret{}", if rotated { "-2" } else { "" }),
    );
    if i.is_multiple_of(2) {
        b.type_ = Some("mysql".into());
        b.env = vec![
            (format!("DB_URL_{i}"), "url".into()),
            (format!("DB_TYPE_{i}"), "type".into()),
        ];
    }
    b
}

fn with_bindings(mut sts: Value, ids: &[u8], rotated: bool) -> Value {
    for i in ids {
        project(&mut sts, &binding(*i, rotated));
    }
    sts
}

/// A change to something no projector writes.
#[derive(Debug, Clone)]
enum Edit {
    Image(String),
    AppEnv(String),
    Annotation(String),
    UnknownField,
    AppVolume,
    Command,
    /// Look-alikes of artefacts that are the app's own.
    OwnRoot(String),
    LookalikeVolume,
    UidConfigMapVolume,
    PrefixAnnotation(String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        "[a-z]{1,5}:[1-9]{2}".prop_map(Edit::Image),
        "[a-z]{1,5}".prop_map(Edit::AppEnv),
        "[a-z]{1,5}".prop_map(Edit::Annotation),
        Just(Edit::UnknownField),
        Just(Edit::AppVolume),
        Just(Edit::Command),
        "/[a-z]{1,6}(/[a-z]{1,4})?".prop_map(Edit::OwnRoot),
        Just(Edit::LookalikeVolume),
        Just(Edit::UidConfigMapVolume),
        "[a-z]{1,8}".prop_map(Edit::PrefixAnnotation),
    ]
}

fn apply_edit(sts: &mut Value, edit: &Edit) {
    let t = &mut sts["spec"]["template"];
    match edit {
        Edit::Image(i) => t["spec"]["containers"][0]["image"] = json!(format!("changed/{i}")),
        Edit::AppEnv(v) => {
            if let Some(env) = t["spec"]["containers"][0]["env"].as_array_mut() {
                env.insert(0, json!({"name": "NEW_APP_VAR", "value": v}));
            }
        }
        Edit::Annotation(v) => {
            t["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"] = json!(v)
        }
        Edit::UnknownField => t["spec"]["someFutureField"] = json!({"enabled": true}),
        Edit::AppVolume => add_volume(t, json!({"name": "added-cache", "emptyDir": {}})),
        Edit::LookalikeVolume => add_volume(
            t,
            json!({"name": "servicebinding-overrides", "projected": {"sources": [{"configMap": {"name": "o"}}]}}),
        ),
        Edit::UidConfigMapVolume => add_volume(
            t,
            json!({"name": "servicebinding-0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "configMap": {"name": "o"}}),
        ),
        Edit::OwnRoot(root) => {
            let own = json!({"name": "SERVICE_BINDING_ROOT", "value": root});
            match t["spec"]["containers"][0]["env"].as_array_mut() {
                Some(env) => env.insert(0, own),
                None => t["spec"]["containers"][0]["env"] = json!([own]),
            }
        }
        Edit::PrefixAnnotation(key) => {
            t["metadata"]["annotations"][format!("projector.servicebinding.io/{key}")] = json!("x")
        }
        Edit::Command => t["spec"]["containers"][0]["command"] = json!(["run"]),
    }
}

fn add_volume(template: &mut Value, volume: Value) {
    match template["spec"]["volumes"].as_array_mut() {
        Some(v) => v.insert(0, volume),
        None => template["spec"]["volumes"] = json!([volume]),
    }
}

fn payload(old: &Value, new: &Value) -> Vec<u8> {
    spaced_payload(old, new, false)
}

/// The payload, compact or pretty-printed.
fn spaced_payload(old: &Value, new: &Value, pretty: bool) -> Vec<u8> {
    payload_in(old, new, pretty, false)
}

/// The payload in defer or reject mode, compact or pretty-printed.
fn payload_in(old: &Value, new: &Value, pretty: bool, reject: bool) -> Vec<u8> {
    let request = validation_request(&settings(reject), &request("UPDATE", old, new));
    let text = if pretty {
        serde_json::to_vec_pretty(&request)
    } else {
        serde_json::to_vec(&request)
    };
    text.expect("serialisable")
}

fn mutated(old: &Value, new: &Value) -> Option<Value> {
    evaluate(&payload(old, new), NOW).mutated_object
}

/// The answer's object as the tree-based edit makes it: the decision on the whole objects (the
/// templates as the policy reads them), applied to the whole parsed object. Equal to the
/// policy's answer only if it reads every member the decision needs and writes back every
/// member it does not read.
fn tree_edited(old: &Value, new: &Value) -> Option<Value> {
    let (new_text, old_text) = (
        new["spec"]["template"].to_string(),
        old["spec"]["template"].to_string(),
    );
    let (template, old_template) = (
        Node::template(&new_text, &TEMPLATE_SHAPE),
        Node::template(&old_text, &TEMPLATE_SHAPE),
    );
    let decision = decide(
        &Admission {
            operation: "UPDATE",
            group: lookup::of_fixture(new).group(),
            kind: kind_of(new).kind(),
            sub_resource: "",
            namespace: "space",
            name: "app",
            object: new,
            old_object: old,
            template: template.as_ref(),
            old_template: old_template.as_ref(),
        },
        &Settings::from_value(&settings(false)).expect("valid settings"),
        NOW,
    );
    let mut tree = new.clone();
    response::edit(&decision, &mut tree)
        .ok()
        .filter(|changed| *changed)?;
    Some(tree)
}

fn held(sts: Value, strategy: &Value) -> Value {
    held_remembering(sts, strategy, "+svc-1", EARLIER)
}

/// The control (`updateStrategy`, `paused`), a marker, or a label/annotation map the request lacked that now holds only
/// markers.
fn allowed_change(path: &str, request: &Value, out: &Value) -> bool {
    let only_markers = |p: &str| {
        request.pointer(p).is_none()
            && out
                .pointer(p)
                .and_then(Value::as_object)
                .is_some_and(|m| m.keys().all(|k| is_marker(k)))
    };
    let marker = ["/metadata/labels/", "/metadata/annotations/"]
        .iter()
        .any(|map| {
            path.strip_prefix(map)
                .is_some_and(|key| is_marker(&key.replace("~1", "/").replace("~0", "~")))
        });
    path.starts_with("/spec/updateStrategy")
        || path == "/spec/paused"
        || marker
        || (matches!(path, "/metadata/labels" | "/metadata/annotations") && only_markers(path))
}

/// An old/new pair as the platform writes them: bindings before and after (maybe rotated), a
/// plain secret volume of the extra prefix kept, added, removed or switched, maybe an app
/// change, maybe held, maybe a runner-style wipe, maybe its owner resuming it.
fn pair() -> impl Strategy<Value = (Value, Value)> {
    (
        (workload(), secret_volume_change()),
        prop::collection::vec(0u8..4, 0..3),
        prop::collection::vec(0u8..4, 0..3),
        any::<bool>(),
        prop::option::of(edit()),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |((base, volume), before, after, rotated, edit, is_held, wipe, resume)| {
                use secret_volume::{attach, detach, switch_secret};
                let mut old = with_bindings(base.clone(), &before, false);
                // A controller's overwrite of a held template whose only artefacts are such
                // volumes reads, evaluated again, as their unbind (docs: known limits).
                let overwrite_of_volumes_only = wipe && before.is_empty();
                if let Some(SecretVolume::Kept | SecretVolume::Removed | SecretVolume::Switched) =
                    volume.filter(|_| !overwrite_of_volumes_only)
                {
                    old = attach(old, "ledger", "ledger-secret");
                }
                let mut old = if is_held {
                    held(old, &control_of(&base))
                } else {
                    old
                };
                if resume && !is_held {
                    // paused by its owner
                    old["spec"]["paused"] = json!(true);
                }
                let mut new = if wipe {
                    base
                } else {
                    with_bindings(old.clone(), &after, rotated)
                };
                new = match volume {
                    Some(SecretVolume::Added) if !wipe => attach(new, "ledger", "ledger-secret"),
                    Some(SecretVolume::Removed) if !wipe => detach(new, "ledger"),
                    Some(SecretVolume::Switched) if !wipe => {
                        switch_secret(new, "ledger", "ledger-secret-2")
                    }
                    _ => new,
                };
                if resume {
                    // `kubectl rollout resume`
                    new["spec"]["paused"] = json!(false);
                }
                if let Some(e) = &edit {
                    apply_edit(&mut new, e);
                }
                (old, new)
            },
        )
}

/// Where an insertion goes: a list of the template (volumes; env or mounts of the container at
/// that index, init containers first) or its annotations.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Volume,
    Env(usize),
    Mount(usize),
    Annotation,
}

/// An element inserted into a template: `choice` picks from what a projector inserts, what
/// looks like it, what the app owns, and copies of what the list already has.
#[derive(Debug, Clone)]
struct Insertion {
    slot: Slot,
    position: usize,
    choice: usize,
}

fn insertion() -> impl Strategy<Value = Insertion> {
    let slot = prop_oneof![
        Just(Slot::Volume),
        (0usize..4).prop_map(Slot::Env),
        (0usize..4).prop_map(Slot::Mount),
        Just(Slot::Annotation),
    ];
    (slot, 0usize..8, 0usize..8).prop_map(|(slot, position, choice)| Insertion {
        slot,
        position,
        choice,
    })
}

/// `template` with `insertion` made. The pool's binding 5 is never in a generated template;
/// binding 0 may be.
fn insert(template: &mut Value, insertion: &Insertion) {
    let (new, old) = (binding(5, false), binding(0, false));
    let secret_env = |secret: &str| json!({"name": "DB", "valueFrom": {"secretKeyRef": {"name": secret, "key": "url"}}});
    let pick = |pool: Vec<Value>, list: &[Value]| {
        let copies = list.len();
        let i = insertion.choice % (pool.len() + copies.min(1));
        pool.get(i)
            .cloned()
            .unwrap_or_else(|| list[insertion.choice % copies].clone())
    };
    let into = |list: &mut Vec<Value>, element: Value| {
        let at = insertion.position % (list.len() + 1);
        list.insert(at, element);
    };
    let containers: Vec<&str> = ["initContainers", "containers"]
        .into_iter()
        .flat_map(|key| {
            let n = template["spec"][key].as_array().map_or(0, Vec::len);
            std::iter::repeat_n(key, n).collect::<Vec<_>>()
        })
        .collect();
    let container = |i: usize| {
        let key = containers[i % containers.len()];
        let index = containers[..i % containers.len()]
            .iter()
            .filter(|k| **k == key)
            .count();
        (key, index)
    };
    let list = |value: &mut Value, key: &str| {
        if !value[key].is_array() {
            value[key] = json!([]);
        }
        std::mem::take(value[key].as_array_mut().expect("a list"))
    };
    match insertion.slot {
        Slot::Volume => {
            let spec = &mut template["spec"];
            let mut volumes = list(spec, "volumes");
            let pool = vec![
                json!({"name": new.volume_name(), "projected": {"sources": [{"secret": {"name": new.secret}}]}}),
                json!({"name": "servicebinding-not-a-uid", "projected": {"sources": []}}),
                json!({"name": format!("binding-{}", "ab".repeat(20)), "projected": {"sources": [{"secret": {"name": "vm-secret"}}]}}),
                json!({"name": "cache", "emptyDir": {}}),
                json!({"name": format!("{}audit", secret_volume::PREFIX), "secret": {"secretName": new.secret}}),
            ];
            let element = pick(pool, &volumes);
            into(&mut volumes, element);
            spec["volumes"] = json!(volumes);
        }
        Slot::Env(i) | Slot::Mount(i) if containers.is_empty() => {
            let _ = i;
        }
        Slot::Env(i) => {
            let (key, index) = container(i);
            let c = &mut template["spec"][key][index];
            let mut env = list(c, "env");
            let pool = vec![
                json!({"name": "SERVICE_BINDING_ROOT", "value": "/bindings"}),
                json!({"name": "SERVICE_BINDING_ROOT", "value": "/other"}),
                secret_env(&new.secret),
                secret_env(&old.secret),
                json!({"name": "TYPE", "valueFrom": {"fieldRef": {"fieldPath": format!("metadata.annotations['{}']", new.annotation("type"))}}}),
                json!({"name": "A", "value": "1"}),
            ];
            let element = pick(pool, &env);
            into(&mut env, element);
            c["env"] = json!(env);
        }
        Slot::Mount(i) => {
            let (key, index) = container(i);
            let c = &mut template["spec"][key][index];
            let mut mounts = list(c, "volumeMounts");
            let pool = vec![
                json!({"name": new.volume_name(), "mountPath": "/bindings/svc-5"}),
                json!({"name": new.volume_name(), "mountPath": "/bindings/a/b"}),
                json!({"name": old.volume_name(), "mountPath": "/bindings/renamed"}),
                json!({"name": format!("{}audit", secret_volume::PREFIX), "mountPath": "/acme/audit"}),
                json!({"name": "cache", "mountPath": "/cache"}),
            ];
            let element = pick(pool, &mounts);
            into(&mut mounts, element);
            c["volumeMounts"] = json!(mounts);
        }
        Slot::Annotation => {
            let annotations = &mut template["metadata"]["annotations"];
            let (key, value) = match insertion.choice % 4 {
                0 => (new.annotation("secret"), new.secret.clone()),
                1 => (new.annotation("type"), "mysql".to_string()),
                2 => ("app.io/x".to_string(), "1".to_string()),
                // An annotation the template has, changed.
                _ => match annotations.as_object().and_then(|a| a.keys().next()) {
                    Some(k) => (k.clone(), "changed".to_string()),
                    None => ("app.io/y".to_string(), "2".to_string()),
                },
            };
            annotations[key] = json!(value);
        }
    }
}

/// Every key a shape reads, at any depth.
fn keys_read(shape: &'static Shape, keys: &mut Vec<&'static str>) {
    for (key, _) in shape.members {
        if !keys.contains(key) {
            keys.push(key);
        }
    }
    let reaches = shape.members.iter().map(|&(_, reach)| reach);
    for reach in reaches.chain([shape.others, shape.elements]) {
        if let Reach::Shaped(inner) | Reach::WhenAsked(inner) = reach {
            keys_read(inner, keys);
        }
    }
}

/// JSON text of any shape, its keys drawn from the members `TEMPLATE_SHAPE` reads and a few it
/// does not, so that levels of unusual shapes, repeated keys and look-alike members all occur.
fn template_like() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec!["null", "true", "1", "1.0", "\"a\"", "\"\""])
        .prop_map(str::to_string);
    let mut keys = Vec::new();
    keys_read(&TEMPLATE_SHAPE, &mut keys);
    // Members nobody reads, and an escaped key, read as the member it names.
    keys.extend(["labels", "image", r"contai\u006eers"]);
    let key = prop::sample::select(keys);
    // Deep enough for an element's members: spec.volumes[*].projected.sources[*].secret.name.
    leaf.prop_recursive(8, 64, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|items| format!("[{}]", items.join(","))),
            prop::collection::vec((key.clone(), inner), 0..4).prop_map(|members| {
                let members: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("\"{k}\":{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

proptest! {
    // Found failures are kept as named regression tests instead of a seed file.
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn mutations_touch_only_the_strategy_and_the_markers((old, new) in pair()) {
        if let Some(out) = mutated(&old, &new) {
            for path in changed_paths(&new, &out) {
                prop_assert!(allowed_change(&path, &new, &out), "mutation outside its fields: {}", path);
            }
        }
    }

    #[test]
    fn the_reference_gives_every_generated_request_the_same_answer((old, new) in pair(), pretty in any::<bool>()) {
        let payload = spaced_payload(&old, &new, pretty);
        let want = restage_gate::oracle::evaluate(&payload, NOW).expect("a tree holds the request");
        let got = evaluate(&payload, NOW);
        prop_assert_eq!(got.accepted, want.accepted);
        prop_assert_eq!(got.audit_annotations.map(|a| a.into_iter().collect()), want.audit_annotations);
        prop_assert_eq!(got.warnings, want.warnings);
        prop_assert_eq!(got.message, want.message);
        prop_assert_eq!(got.mutated_object, want.mutated_object);
    }

    #[test]
    fn the_object_written_from_raw_members_is_the_tree_edit((old, new) in pair(), pretty in any::<bool>()) {
        let want = tree_edited(&old, &new);
        let payload = spaced_payload(&old, &new, pretty);
        prop_assert_eq!(evaluate(&payload, NOW).mutated_object, want.clone());
        // As written, not only as read: no member written twice.
        let written = mutated_object_text(&restage_gate::answer(&payload, NOW));
        prop_assert_eq!(written.as_deref().and_then(repeated_key), None);
        // The template is copied as the request has it, spacing and all (the generated ones
        // never leave it in doubt where it starts).
        if let Some(written) = written {
            let asked = std::str::from_utf8(&payload).ok()
                .and_then(|text| member_text(text, &["request", "object", "spec", "template"]));
            prop_assert_eq!(member_text(&written, &["spec", "template"]), asked);
        }
        // Held and released objects, not only first holds.
        if let Some(out) = want {
            prop_assert_eq!(mutated(&out, &new), tree_edited(&out, &new));
        }
    }

    /// A pod created from a template that mounts a deleted secret hangs, so a change that stops
    /// mounting one (an unbind, a switched secret) is never refused, and defer mode never leaves
    /// a Deployment paused on the old template. A held workload whose request dropped the markers
    /// is a controller's overwrite (the projector restores the bindings): not such a change.
    #[test]
    fn a_change_that_stops_mounting_a_secret_is_never_refused_nor_left_paused(
        (old, new) in pair(),
        reject in any::<bool>(),
    ) {
        let mounted = |o: &Value| mounted_secrets(&o["spec"]["template"]);
        let kept = mounted(&new);
        let stops = mounted(&old).iter().any(|s| !kept.contains(s));
        let overwritten = markers::is_held(&old) && !markers::is_held(&new);
        if stops && !overwritten {
            let r = evaluate(&payload_in(&old, &new, false, reject), NOW);
            prop_assert!(r.accepted, "refused: {:?}", r.message);
            // Reject mode never mutates: it neither holds nor releases.
            let out = r.mutated_object.unwrap_or(new);
            let kind = lookup::of_fixture(&out);
            if !reject && !kind.holds_unbinds() {
                prop_assert_ne!(out.pointer(&kind.control_path()), Some(&kind.held_control()));
            }
        }
    }

    /// `kubectl rollout resume` of a Deployment the policy does not hold is its owner's change,
    /// in either mode: accepted, and not paused again.
    #[test]
    fn an_owners_resume_is_never_paused_again((old, new) in pair(), reject in any::<bool>()) {
        let kind = lookup::of_fixture(&old);
        let (control, held) = (kind.control_path(), kind.held_control());
        let resumed = old.pointer(&control) == Some(&held) && new.pointer(&control) != Some(&held);
        if kind.resumed(&old).is_some() && resumed && !markers::is_held(&old) {
            let r = evaluate(&payload_in(&old, &new, false, reject), NOW);
            prop_assert!(r.accepted, "refused: {:?}", r.message);
            let out = r.mutated_object.unwrap_or(new);
            prop_assert_ne!(out.pointer(&control), Some(&held));
        }
    }

    #[test]
    fn evaluating_the_output_again_changes_nothing((old, new) in pair()) {
        if let Some(out) = mutated(&old, &new) {
            prop_assert_eq!(mutated(&old, &out), None);
        }
    }

    #[test]
    fn release_restores_exactly_the_remembered_strategy(
        base in app(),
        ids in prop::collection::vec(0u8..4, 1..3),
        remembered in prop_oneof![
            Just(json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 2}})),
            Just(json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%", "partition": 0}})),
        ],
        e in edit(),
    ) {
        let old = held(with_bindings(base, &ids, false), &remembered);
        let mut new = old.clone();
        apply_edit(&mut new, &e);
        let out = mutated(&old, &new).expect("a release mutates");
        prop_assert_eq!(&out["spec"]["updateStrategy"], &remembered);
        prop_assert!(!markers::is_held(&out));
    }

    #[test]
    fn adding_then_removing_a_binding_is_no_change(base in app(), kept in prop::collection::vec(0u8..3, 1..3), extra in 3u8..6) {
        let rules = ArtefactRules::default();
        let before = with_bindings(base, &kept, false);
        let added = with_bindings(before.clone(), &[extra], false);
        let mut removed = added.clone();
        unproject(&mut removed, &binding(extra, false).uid, true);
        let t = |s: &Value| s["spec"]["template"].clone();
        prop_assert_eq!(classify(&t(&before), &t(&added), &rules).kind, ChangeKind::BindingOnly);
        prop_assert_eq!(classify(&t(&added), &t(&before), &rules).kind, ChangeKind::BindingOnly);
        prop_assert_eq!(classify(&t(&before), &t(&removed), &rules).kind, ChangeKind::NoChange);
    }

    #[test]
    fn a_change_outside_the_artefacts_is_never_binding_only(
        base in app(),
        ids in prop::collection::vec(0u8..4, 0..3),
        more in prop::collection::vec(0u8..4, 0..3),
        e in edit(),
    ) {
        let rules = ArtefactRules::default();
        let old = with_bindings(base, &ids, false);
        let mut new = with_bindings(old.clone(), &more, false);
        apply_edit(&mut new, &e);
        prop_assert_eq!(
            classify(&old["spec"]["template"], &new["spec"]["template"], &rules).kind,
            ChangeKind::Restage
        );
    }

    #[test]
    fn templates_compared_as_raw_json_classify_as_whole_trees((old, new) in pair(), pretty in any::<bool>()) {
        // Pretty-printed, every member's text differs while the JSON does not.
        let rules = extra_rules();
        let (a, b) = (&old["spec"]["template"], &new["spec"]["template"]);
        let text = |v: &Value, pretty: bool| {
            let text = if pretty { serde_json::to_string_pretty(v) } else { serde_json::to_string(v) };
            text.expect("serialisable")
        };
        let (a_text, b_text) = (text(a, false), text(b, pretty));
        let read = |t| Node::template(t, &TEMPLATE_SHAPE).expect("JSON");
        prop_assert_eq!(compare(&read(&a_text), &read(&b_text), &rules), classify(a, b, &rules));
    }

    #[test]
    fn templates_with_elements_inserted_or_removed_classify_as_whole_trees(
        (old, _) in pair(),
        insertions in prop::collection::vec(insertion(), 1..4),
    ) {
        let old = old["spec"]["template"].clone();
        let mut new = old.clone();
        for i in &insertions {
            insert(&mut new, i);
        }
        let rules = extra_rules();
        let (a_text, b_text) = (old.to_string(), new.to_string());
        let read = |t| Node::template(t, &TEMPLATE_SHAPE).expect("JSON");
        prop_assert_eq!(compare(&read(&a_text), &read(&b_text), &rules), classify(&old, &new, &rules));
        // And removed: the change back.
        prop_assert_eq!(compare(&read(&b_text), &read(&a_text), &rules), classify(&new, &old, &rules));
    }

    #[test]
    fn templates_of_any_shape_classify_as_whole_trees(old in template_like(), new in template_like()) {
        let rules = extra_rules();
        let read = |t| Node::template(t, &TEMPLATE_SHAPE).expect("JSON");
        let tree = |t: &str| serde_json::from_str::<Value>(t).expect("JSON");
        prop_assert_eq!(
            compare(&read(&old), &read(&new), &rules),
            classify(&tree(&old), &tree(&new), &rules)
        );
    }

    #[test]
    fn arbitrary_bytes_are_answered_never_an_error(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        prop_assert!(restage_gate::validate(&bytes).is_ok());
        prop_assert!(restage_gate::validate_settings(&bytes).is_ok());
    }
}

/// A template with an escaped key (copied as it stands), or with a key repeated in its text (its
/// nodes written instead): the object written is the tree edit, no key written twice.
#[test]
fn a_template_whose_text_cannot_be_copied_is_written_as_the_tree_edit() {
    let with_key = |mut sts: Value, key: &str| {
        sts["spec"]["template"]["metadata"]["annotations"][key] = json!("2");
        sts
    };
    for key in ["x\"escaped", "k"] {
        let old = with_key(fixture("statefulset-0-unbound.json"), key);
        let new = with_key(fixture("statefulset-1-bound-upsi.json"), key);
        let want = tree_edited(&old, &new).expect("a hold");
        let mut text = String::from_utf8(payload(&old, &new)).expect("UTF-8");
        if key == "k" {
            // The request's object (before `oldObject`) repeats the annotation, the last value
            // kept, as a tree keeps it.
            let template = text.find(r#""template":{"#).expect("a template");
            let at = template
                + text[template..]
                    .find(r#""annotations":{"#)
                    .expect("annotations");
            text.insert_str(at + r#""annotations":{"#.len(), r#""k":"1","#);
        }
        let written =
            mutated_object_text(&restage_gate::answer(text.as_bytes(), NOW)).expect("an object");
        assert_eq!(repeated_key(&written), None, "{written}");
        assert_eq!(
            serde_json::from_str::<Value>(&written).ok(),
            Some(want),
            "{key}"
        );
    }
}

/// Members the request's object repeats (a top-level member, one of `metadata`'s and `spec`'s
/// kept raw, a label the policy does not read): each written once, with its last value, as the
/// tree edit has it.
#[test]
fn members_the_request_repeats_are_written_once_with_their_last_value() {
    let old = fixture("statefulset-0-unbound.json");
    let new = fixture("statefulset-1-bound-upsi.json");
    let want = tree_edited(&old, &new).expect("a hold");
    let mut text = String::from_utf8(payload(&old, &new)).expect("UTF-8");
    // The request's object comes before its `oldObject`, so each first match is the object's
    // own member; each repeats one the fixture has, the fixture's value last. A repeated `spec`
    // goes in last, first in the object, so that the members above find the fixture's.
    for (member, repeated) in [
        (r#""metadata":{"#, r#""uid":"first","#),
        (
            r#""labels":{"#,
            r#""korifi.cloudfoundry.org/version":"first","#,
        ),
        (r#""spec":{"#, r#""podManagementPolicy":"first","#),
        (r#""object":{"#, r#""apiVersion":"first","#),
        (
            r#""object":{"#,
            r#""spec":{"podManagementPolicy":"first"},"#,
        ),
    ] {
        let at = text.find(member).expect(member) + member.len();
        text.insert_str(at, repeated);
    }
    let written =
        mutated_object_text(&restage_gate::answer(text.as_bytes(), NOW)).expect("an object");
    assert_eq!(repeated_key(&written), None, "{written}");
    assert_eq!(serde_json::from_str::<Value>(&written).ok(), Some(want));
}
