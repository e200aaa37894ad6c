//! The fast path against the reference (`restage_gate::oracle`): realistic workloads of every
//! kind the policy holds, edited the way binds, unbinds, owners, controllers and look-alikes
//! edit them, then written out as text the way any client may (key order, whitespace, escapes,
//! repeated keys, number forms). Both must give the same answer: decision, messages, audit
//! annotations and the mutated object.
#![no_main]

use std::sync::OnceLock;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use restage_gate::clock::UtcTime;
use restage_gate::markers::{MARKER_PREFIX, RELEASE_ANNOTATION, RELEASE_IN_WINDOW};
use restage_gate::workload::kinds;
use restage_gate_testkit::admission::{request_for, validation_request};
use restage_gate_testkit::descriptor::Owner;
use restage_gate_testkit::hold::held_remembering;
use restage_gate_testkit::lookup;
use restage_gate_testkit::projector::{bind, project_vmware, unbind, Binding};
use restage_gate_testkit::{korifi, kubectl, lookalike};
use serde_json::{json, Value};

/// Wednesday 2026-12-02T16:51:06Z.
const NOW: UtcTime = UtcTime(1_796_230_266);

#[derive(Arbitrary, Debug)]
enum Edit {
    Bind(u8),
    Unbind(u8),
    /// The same binding projecting another secret.
    Rotate(u8),
    VmwareBind(u8),
    /// The owner's own change: the image, an env var, a template annotation.
    Image(u8),
    Env(u8, u8),
    Annotation(u8, u8),
    /// The app's own look-alikes of artefacts.
    LookalikeVolume(u8),
    DeclareRoot(u8),
    ChangeRoot(Option<u8>),
    /// Controllers and operators.
    RunnerWrite,
    RolloutRestart,
    Scale(u8),
    Control(u8),
    /// `restage-gate.io/release`: `now`, or (true) `window`.
    Release(bool),
    DropMarkers,
    Generation(u8),
    /// Any JSON at one of a few places.
    Garbage(u8, Scalar),
}

#[derive(Arbitrary, Debug, Clone)]
enum Scalar {
    Null,
    Bool(bool),
    Int(i32),
    Text(u8),
    Empty,
    EmptyList,
}

impl Scalar {
    fn value(&self) -> Value {
        match self {
            Scalar::Null => Value::Null,
            Scalar::Bool(b) => json!(b),
            Scalar::Int(i) => json!(i),
            Scalar::Text(i) => json!(WORDS[usize::from(*i) % WORDS.len()]),
            Scalar::Empty => json!({}),
            Scalar::EmptyList => json!([]),
        }
    }
}

const WORDS: [&str; 8] = [
    "true",
    "OnDelete",
    "RollingUpdate",
    "SERVICE_BINDING_ROOT",
    "/bindings",
    "servicebinding-00000000-1d4a-4e8b-9c6f-0a1b2c3d4e5f",
    "projector.servicebinding.io/secret-00000000-1d4a-4e8b-9c6f-0a1b2c3d4e5f",
    "é\"\\\n",
];

const GARBAGE: [&str; 12] = [
    "/spec/template/spec/volumes",
    "/spec/template/spec/containers",
    "/spec/template/metadata/annotations",
    "/spec/template/spec/containers/0/env",
    "/spec/template/spec/containers/0/volumeMounts",
    "/spec/updateStrategy",
    "/spec/paused",
    "/spec/replicas",
    "/metadata/labels",
    "/metadata/annotations",
    "/status",
    "/status/observedGeneration",
];

/// How the payload's text is written.
#[derive(Arbitrary, Debug)]
struct Style {
    seed: u64,
    /// Objects' members in another order.
    shuffle: bool,
    /// Spaces and newlines between tokens.
    spaces: bool,
    /// Characters of strings and keys written as `\u` escapes.
    escapes: bool,
    /// A key written twice, the first time with another value (the last one counts).
    repeats: bool,
    /// Zero written `-0`, which reads as the same integer.
    numbers: bool,
}

#[derive(Arbitrary, Debug)]
struct Input {
    kind: u8,
    bound: Vec<u8>,
    held: Option<u8>,
    edits: Vec<Edit>,
    old_edits: Vec<Edit>,
    reject: bool,
    window: bool,
    operation: u8,
    style: Style,
}

fn binding(i: u8) -> Binding {
    let i = i % 4;
    Binding::new(
        &format!("{i:02x}000000-1d4a-4e8b-9c6f-0a1b2c3d4e5f"),
        &format!("svc-{i}"),
        &format!("svc-{i}-secret"),
    )
}

fn set(doc: &mut Value, pointer: &str, value: Value) {
    let (parent, key) = pointer.rsplit_once('/').unwrap_or(("", pointer));
    match doc.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key.to_string(), value);
        }
        Some(Value::Array(items)) => {
            if let Some(item) = key.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                *item = value;
            }
        }
        _ => {}
    }
}

fn apply(object: Value, edit: &Edit) -> Value {
    let mut o = object;
    match edit {
        Edit::Bind(i) => return bind(o, &binding(*i)),
        Edit::Unbind(i) => return unbind(o, &binding(*i)),
        Edit::Rotate(i) => {
            let mut b = binding(*i);
            b.secret.push_str("-rotated");
            return bind(o, &b);
        }
        Edit::VmwareBind(i) => {
            let digest = format!("{:040x}", u64::from(*i % 4) + 1);
            project_vmware(&mut o, &digest, &binding(*i));
        }
        Edit::Image(i) => set(
            &mut o,
            "/spec/template/spec/containers/0/image",
            json!(format!("app:{i}")),
        ),
        Edit::Env(k, v) => {
            if let Some(env) = o
                .pointer_mut("/spec/template/spec/containers/0/env")
                .and_then(Value::as_array_mut)
            {
                env.push(json!({"name": WORDS[usize::from(*k) % WORDS.len()], "value": WORDS[usize::from(*v) % WORDS.len()]}));
            }
        }
        Edit::Annotation(k, v) => {
            let key = WORDS[usize::from(*k) % WORDS.len()];
            if let Some(Value::Object(a)) = o.pointer_mut("/spec/template/metadata/annotations") {
                a.insert(key.into(), json!(WORDS[usize::from(*v) % WORDS.len()]));
            }
        }
        Edit::LookalikeVolume(i) => {
            let volumes = lookalike::volumes();
            let (_, volume) = &volumes[usize::from(*i) % volumes.len()];
            lookalike::mount(&mut o, volume);
        }
        Edit::DeclareRoot(i) => lookalike::declare_root(&mut o, WORDS[usize::from(*i) % WORDS.len()]),
        Edit::ChangeRoot(v) => lookalike::change_root(
            &mut o,
            v.map(|v| json!({"name": "SERVICE_BINDING_ROOT", "value": WORDS[usize::from(v) % WORDS.len()]})),
        ),
        Edit::RunnerWrite => {
            let kind = lookup::of_fixture(&o);
            if kind.owner() == Owner::Korifi {
                return korifi::runner_write(&o, &korifi::desired(0, 1));
            }
            return kind.fixture();
        }
        Edit::RolloutRestart => kubectl::rollout_restart(&mut o, "2026-12-02T16:50:00Z"),
        Edit::Scale(n) => set(&mut o, "/spec/replicas", json!(n % 5)),
        Edit::Control(i) => {
            let controls = [
                json!({"type": "RollingUpdate"}),
                json!({"type": "OnDelete"}),
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 1}}),
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}}),
            ];
            // a kind held by a pause takes either boolean, the others a strategy
            let kind = lookup::of_fixture(&o);
            let control = if kind.held_control().is_boolean() {
                json!(i % 2 == 0)
            } else {
                controls[usize::from(*i) % controls.len()].clone()
            };
            set(&mut o, &kind.control_path(), control);
        }
        Edit::Release(in_window) => {
            let value = if *in_window { RELEASE_IN_WINDOW } else { "now" };
            kubectl::annotate(&mut o, RELEASE_ANNOTATION, value)
        }
        Edit::DropMarkers => {
            for map in ["/metadata/labels", "/metadata/annotations"] {
                if let Some(Value::Object(m)) = o.pointer_mut(map) {
                    m.retain(|k, _| !k.starts_with(MARKER_PREFIX));
                }
            }
        }
        Edit::Generation(g) => set(&mut o, "/metadata/generation", json!(g % 4)),
        Edit::Garbage(at, value) => set(&mut o, GARBAGE[usize::from(*at) % GARBAGE.len()], value.value()),
    }
    o
}

/// A small deterministic stream of choices for the text's style.
struct Choices(u64);

impl Choices {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.next() % n == 0
    }
}

fn write(out: &mut String, value: &Value, style: &Style, c: &mut Choices) {
    let space = |out: &mut String, c: &mut Choices| {
        if style.spaces && c.one_in(3) {
            out.push_str([" ", "\n", "\t", "  \r\n "][(c.next() % 4) as usize]);
        }
    };
    space(out, c);
    match value {
        Value::Object(map) => {
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            if style.shuffle {
                for i in (1..members.len()).rev() {
                    members.swap(i, (c.next() % (i as u64 + 1)) as usize);
                }
            }
            out.push('{');
            let mut first = true;
            for (key, value) in members {
                let mut member = |out: &mut String, value: &Value, c: &mut Choices| {
                    if !std::mem::take(&mut first) {
                        out.push(',');
                    }
                    space(out, c);
                    string(out, key, style, c);
                    space(out, c);
                    out.push(':');
                    write(out, value, style, c);
                };
                if style.repeats && c.one_in(5) {
                    member(out, &json!("first"), c);
                }
                member(out, value, c);
            }
            space(out, c);
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(out, item, style, c);
            }
            space(out, c);
            out.push(']');
        }
        Value::String(s) => string(out, s, style, c),
        Value::Number(n) if style.numbers && n.as_i64() == Some(0) && c.one_in(2) => {
            out.push_str("-0")
        }
        other => out.push_str(&other.to_string()),
    }
    space(out, c);
}

fn string(out: &mut String, text: &str, style: &Style, c: &mut Choices) {
    if !style.escapes {
        out.push_str(&Value::from(text).to_string());
        return;
    }
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c0 if (c0 as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c0 as u32)),
            c0 if c.one_in(6) => {
                let mut units = [0u16; 2];
                for unit in c0.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
            c0 => out.push(c0),
        }
    }
    out.push('"');
}

fn base(kind: &str) -> &'static Value {
    static BASES: OnceLock<Vec<(String, Value)>> = OnceLock::new();
    let bases = BASES.get_or_init(|| {
        kinds()
            .map(|k| (k.kind().to_string(), lookup::unbound(k)))
            .collect()
    });
    &bases
        .iter()
        .find(|(k, _)| k == kind)
        .expect("a fixture for every kind")
        .1
}

fuzz_target!(|input: Input| {
    let all: Vec<_> = kinds().collect();
    let workload = all[usize::from(input.kind) % all.len()];
    let kind = workload.kind();
    let mut old = base(kind).clone();
    for &b in input.bound.iter().take(4) {
        old = bind(old, &binding(b));
    }
    // The testkit's edits expect a well-formed workload: garbage goes in last, and only into
    // the new object.
    let garbage = |e: &&Edit| matches!(e, Edit::Garbage(..));
    for edit in input.old_edits.iter().take(4).filter(|e| !garbage(e)) {
        old = apply(old, edit);
    }
    if let Some(h) = input.held {
        let remembered = workload.default_control();
        old = held_remembering(
            old,
            &remembered,
            &format!("+svc-{}", h % 4),
            "2026-12-01T09:00:00Z",
        );
    }
    let mut new = old.clone();
    let edits = input.edits.iter().take(6);
    for edit in edits
        .clone()
        .filter(|e| !garbage(e))
        .chain(edits.filter(garbage))
    {
        new = apply(new, edit);
    }
    let operation =
        ["UPDATE", "UPDATE", "UPDATE", "CREATE", "DELETE"][usize::from(input.operation) % 5];
    let windows = if input.window {
        json!([{"days": ["Wed"], "start": "16:00", "end": "18:00"}])
    } else {
        json!([])
    };
    let settings = json!({"mode": if input.reject { "reject" } else { "defer" }, "maintenanceWindows": windows});
    let group = workload.declared().group;
    let payload = validation_request(&settings, &request_for(group, kind, operation, &old, &new));
    let mut text = String::new();
    write(
        &mut text,
        &payload,
        &input.style,
        &mut Choices(input.style.seed | 1),
    );
    let Some(want) = restage_gate::oracle::evaluate(text.as_bytes(), NOW) else {
        return;
    };
    let got = restage_gate::evaluate(text.as_bytes(), NOW);
    let audit = got
        .audit_annotations
        .map(|a| a.into_iter().collect::<std::collections::BTreeMap<_, _>>());
    assert_eq!(got.accepted, want.accepted, "accepted\n{text}");
    assert_eq!(audit, want.audit_annotations, "audit annotations\n{text}");
    assert_eq!(got.message, want.message, "message\n{text}");
    assert_eq!(got.warnings, want.warnings, "warnings\n{text}");
    assert_eq!(
        got.mutated_object, want.mutated_object,
        "mutated object\n{text}"
    );
});
