//! What the decision reads of an admission request: its parts ([`Admission`]) and, of the
//! objects, the members the read plan names, built from the kinds table.

use serde_json::Value;

use crate::markers::MARKER_PREFIX;
use crate::template::artefacts;
use crate::workload::{self, Kind};
use raw::ReadPlan;

/// The parts of an admission request the decision reads: the objects as far as
/// [`read_plan`] reads them, and their pod templates as far as binding recognition looks.
#[derive(Debug, Clone, Copy)]
pub struct Admission<'a, T> {
    pub operation: &'a str,
    pub group: &'a str,
    pub kind: &'a str,
    pub sub_resource: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: &'a Value,
    pub old_object: &'a Value,
    /// The pod templates, at the kind's template path.
    pub template: Option<&'a T>,
    pub old_template: Option<&'a T>,
}

/// Korifi's label naming the Cloud Foundry app, shown in a refusal.
pub const APP_GUID_LABEL: &str = "korifi.cloudfoundry.org/app-guid";

const NAME: &[&str] = &["metadata", "name"];
const NAMESPACE: &[&str] = &["metadata", "namespace"];
/// A window spreading its releases gives each object the slot of its uid.
pub(crate) const UID: &[&str] = &["metadata", "uid"];
pub(crate) const DELETION: &[&str] = &["metadata", "deletionTimestamp"];
const LABELS: &[&str] = &["metadata", "labels"];
const ANNOTATIONS: &[&str] = &["metadata", "annotations"];

/// What the decision reads of the objects: the names a refusal shows, deletion, the policy's
/// own label and annotations (of the workload's others, only the app a refusal names), and
/// what each kind declares: its control, its fields, its pod template and its `status`.
pub fn read_plan() -> ReadPlan {
    plan_for(workload::kinds().map(|w| w.declared()))
}

/// [`read_plan`] for these kinds.
fn plan_for(kinds: impl Iterator<Item = &'static Kind> + Clone) -> ReadPlan {
    // A remembered annotation outside the markers' prefix is read too.
    let annotations = std::iter::once(MARKER_PREFIX).chain(
        kinds
            .clone()
            .map(|k| k.remembered)
            .filter(|key| !key.starts_with(MARKER_PREFIX)),
    );
    let mut plan = ReadPlan {
        values: vec![NAME, NAMESPACE, UID, DELETION],
        maps: vec![
            (LABELS, vec![MARKER_PREFIX, APP_GUID_LABEL]),
            (ANNOTATIONS, annotations.collect()),
        ],
        ..ReadPlan::default()
    };
    // A path named twice is read once (the reader lays the plan out by level).
    for kind in kinds {
        let fields = [kind.control.field()]
            .into_iter()
            .chain(kind.reads.iter().copied());
        plan.values.extend(fields.map(|f| f.path));
        plan.templates
            .push((kind.template, &artefacts::TEMPLATE_SHAPE));
        let status = kind.status.iter();
        plan.status
            .extend(status.map(|m| (m.name, m.json.element_members())));
    }
    plan
}

#[cfg(test)]
pub(crate) mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::view::at;
    use crate::workload::{Control, Field, Json, StatusMember};

    /// A kind the policy does not ship, held with `spec.paused` like a Deployment, reading
    /// fields deeper than two keys and status members of every JSON type. The decision's tests
    /// give it a `Workload` that declines an object with a blue-green strategy or a
    /// `workloadRef` (no pod template of its own).
    pub(crate) const EXAMPLE: Kind = Kind {
        group: "example.test",
        version: "v1",
        kind: "Example",
        resource: "examples",
        template: &["spec", "template"],
        control: Control::pause(&["spec", "paused"]),
        remembered: "restage-gate.io/original-paused",
        reads: &[
            BLUE_GREEN,
            WORKLOAD_REF,
            Field::new(&["metadata", "generation"], Json::Integer),
        ],
        status: &[
            StatusMember::new("pauseConditions", Json::ListOf(&["reason"])),
            StatusMember::new("abort", Json::Boolean),
            StatusMember::new("currentPodHash", Json::String),
            StatusMember::new("observedGeneration", Json::Integer),
            StatusMember::new("canary", Json::Object),
        ],
    };
    pub(crate) const BLUE_GREEN: Field =
        Field::new(&["spec", "strategy", "blueGreen"], Json::Object);
    pub(crate) const WORKLOAD_REF: Field = Field::new(&["spec", "workloadRef"], Json::Object);

    /// A value of `json`; integers as numbers, or as strings of digits.
    fn value_of(json: Json, digits: bool) -> Value {
        match json {
            Json::Integer if digits => json!("7"),
            Json::Integer => json!(7),
            Json::String => json!("r2"),
            Json::Boolean => json!(true),
            Json::Object => json!({"nested": {"deeper": [1, "two"]}}),
            Json::ListOf(members) => {
                let element = |extra: &str| {
                    let mut item: serde_json::Map<String, Value> = members
                        .iter()
                        .map(|m| (m.to_string(), json!(format!("{m}-{extra}"))))
                        .collect();
                    item.insert("unread".into(), json!(extra));
                    Value::Object(item)
                };
                json!([element("a"), element("b")])
            }
        }
    }

    /// What the reader should give back of `value`: a list's elements at the declared members
    /// only, anything else whole.
    fn as_declared(json: Json, value: &Value) -> Value {
        match (json, value) {
            (Json::ListOf(members), Value::Array(items)) => Value::Array(
                items
                    .iter()
                    .map(|item| {
                        let kept = item.as_object().into_iter().flatten();
                        let kept = kept.filter(|(k, _)| members.contains(&k.as_str()));
                        Value::Object(kept.map(|(k, v)| (k.clone(), v.clone())).collect())
                    })
                    .collect(),
            ),
            _ => value.clone(),
        }
    }

    /// A stored object with a value of the declared type at each declared field and status
    /// member, read with `plan`: the reader keeps each, of the declared type.
    fn assert_read_as_declared(kind: &Kind, plan: &ReadPlan) {
        for digits in [false, true] {
            let mut object = json!({"metadata": {"name": "orders"}, "status": {"other": 1}});
            let control = kind.control.field();
            let fields = std::iter::once(&control).chain(kind.reads);
            for field in fields.clone() {
                let (last, parents) = field.path.split_last().expect("a path");
                let parent = parents.iter().fold(&mut object, |o, key| &mut o[*key]);
                parent[*last] = value_of(field.json, digits);
            }
            for member in kind.status {
                object["status"][member.name] = value_of(member.json, digits);
            }
            let text = object.to_string();
            let read = raw::read_object(&text, plan, true).expect("JSON").read;
            for field in fields.clone() {
                let path = field.path.join(".");
                let got = at(&read, field.path);
                assert_eq!(
                    got,
                    Some(&value_of(field.json, digits)),
                    "{} {path}",
                    kind.kind
                );
                assert!(field.of(&read).is_some(), "{} {path}", kind.kind);
            }
            for member in kind.status {
                let name = member.name;
                let want = as_declared(member.json, &value_of(member.json, digits));
                assert_eq!(
                    at(&read, &["status", name]),
                    Some(&want),
                    "{} status.{name}",
                    kind.kind
                );
                assert!(member.of(&read["status"]).is_some(), "{} {name}", kind.kind);
                if member.json == Json::Integer {
                    assert_eq!(member.integer(&read["status"]), Some(7), "{name}");
                }
            }
            assert!(read["status"].get("other").is_none(), "{}", kind.kind);
        }
    }

    #[test]
    fn every_kind_has_its_control_fields_and_status_members_read_as_declared() {
        let plan = read_plan();
        for kind in workload::kinds().map(|w| w.declared()) {
            assert_read_as_declared(kind, &plan);
        }
        // Status members of every JSON type, and fields deeper than two keys.
        assert_read_as_declared(&EXAMPLE, &plan_for(std::iter::once(&EXAMPLE)));
    }

    /// [`EXAMPLE`] with its pause flag one level down, inside another kind's control.
    const NESTED: Kind = Kind {
        control: Control::pause(&["spec", "updateStrategy", "paused"]),
        ..EXAMPLE
    };

    #[test]
    fn the_plan_reads_every_kind_as_declared_whatever_their_order() {
        // A control inside another kind's control is read once, whole, before or after it.
        let kinds: Vec<&'static Kind> = workload::kinds().map(|w| w.declared()).collect();
        let orders = [
            kinds
                .iter()
                .rev()
                .copied()
                .chain([&NESTED])
                .collect::<Vec<_>>(),
            [&NESTED].into_iter().chain(kinds.iter().copied()).collect(),
            [&NESTED]
                .into_iter()
                .chain(kinds.iter().rev().copied())
                .collect(),
        ];
        for order in orders {
            let plan = plan_for(order.iter().copied());
            for kind in &order {
                assert_read_as_declared(kind, &plan);
            }
        }
    }

    #[test]
    fn a_reading_takes_only_the_declared_type() {
        let status = json!({"abort": "true", "currentPodHash": 5, "observedGeneration": "7x",
            "canary": [], "pauseConditions": {"reason": "x"}});
        for member in EXAMPLE.status {
            assert_eq!(member.of(&status), None, "{}", member.name);
        }
    }
}
