//! The workload kinds a servicebinding.io runtime projects into, one file each behind one
//! small interface. The decision table (`decision.rs`) asks the kind how to hold, release and
//! read a rollout; everything that differs between kinds lives here.
//!
//! A kind is declared once, in its file in `kinds/`: its [`Kind`] says what the policy reads and
//! writes of it, and `make kinds` lists the file in [`KINDS`], which makes the policy hold it.
//! The request's reader, the markers a release removes, the manifests' rules and the tests all
//! follow the table.

mod control;
mod kinds;
mod update_strategy;

use serde_json::Value;

use crate::markers::{self, Hold, SHARED_ANNOTATIONS};
use crate::template::classify::Change;
use crate::view::{at, set_at, Unwritable};

pub use control::{Control, Held};
pub use kinds::*;
pub use update_strategy::{Strategy, ORIGINAL_STRATEGY_ANNOTATION};

/// What the policy knows of a kind, besides how it behaves ([`Workload`]).
#[derive(Debug)]
pub struct Kind {
    /// API group and version, as a webhook rule names them.
    pub group: &'static str,
    pub version: &'static str,
    /// `kind` as the API names it: `StatefulSet`.
    pub kind: &'static str,
    /// The resource a webhook rule names: `statefulsets`.
    pub resource: &'static str,
    /// Where the pod template sits, as object keys.
    pub template: &'static [&'static str],
    /// The field a hold replaces (`spec.updateStrategy`, `spec.paused`, at any depth) and
    /// what it sets there.
    pub control: Control,
    /// The annotation that remembers the replaced control; it starts with
    /// [`markers::MARKER_PREFIX`].
    pub remembered: &'static str,
    /// The other fields of the object it reads (from the object's top, never under `status`
    /// or the pod template).
    pub reads: &'static [Field],
    /// The members of the stored object's `status` it reads to tell a rollout under way.
    pub status: &'static [StatusMember],
}

/// A field a kind reads, as object keys, and the JSON it holds.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub path: &'static [&'static str],
    pub json: Json,
}

/// A member of the stored object's `status` a kind reads: one member name, as the reader
/// reads `status` one level deep (a longer path could not be read, so it cannot be declared).
#[derive(Debug, Clone, Copy)]
pub struct StatusMember {
    pub name: &'static str,
    pub json: Json,
}

/// The JSON a field or status member holds. The reader reads a [`Json::ListOf`] member's
/// elements only at the members named; a reading ([`Field::of`], [`StatusMember::of`]) takes a
/// value only of the declared type, so a kind's readings never see another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Json {
    /// An integer; also a string of digits, as a custom resource may declare it.
    Integer,
    String,
    Boolean,
    Object,
    /// A list of objects, of which only these members are read.
    ListOf(&'static [&'static str]),
}

impl Json {
    /// Whether `value` is of this type.
    pub fn admits(self, value: &Value) -> bool {
        match self {
            Json::Integer => integer(Some(value)).is_some(),
            Json::String => value.is_string(),
            Json::Boolean => value.is_boolean(),
            Json::Object => value.is_object(),
            Json::ListOf(_) => value.is_array(),
        }
    }

    /// The members read of a list's objects; none for another type.
    pub fn element_members(self) -> &'static [&'static str] {
        match self {
            Json::ListOf(members) => members,
            _ => &[],
        }
    }
}

impl Field {
    pub const fn new(path: &'static [&'static str], json: Json) -> Self {
        Field { path, json }
    }

    /// The field of `object`, when it holds the declared type.
    pub fn of<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        at(object, self.path).filter(|v| self.json.admits(v))
    }
}

impl StatusMember {
    pub const fn new(name: &'static str, json: Json) -> Self {
        StatusMember { name, json }
    }

    /// The member of the `status` object, when it holds the declared type.
    pub fn of<'a>(&self, status: &'a Value) -> Option<&'a Value> {
        status.get(self.name).filter(|v| self.json.admits(v))
    }

    /// The member as an integer (declared [`Json::Integer`]).
    pub fn integer(&self, status: &Value) -> Option<i64> {
        integer(self.of(status))
    }
}

/// A kind whose controller rolls every pod when the pod template changes: what differs
/// between kinds beyond their declaration ([`Kind`], whose [`Control`] says how a hold, a
/// release and the remembered original work). Every value is read from the request's own
/// JSON, only where the declaration says.
///
/// A kind answers:
/// - what it is and what is read and written of it: [`Workload::declared`];
/// - whether it may hold this object at all: [`Workload::holds`] (by default, yes);
/// - whether a rollout is under way: [`Workload::rolling_out`];
/// - whether a binding change must roll now instead of waiting (an unbind, a secret switch):
///   [`Workload::must_roll_now`] (by default, as its control says);
/// - the commands a message gives: [`Workload::restart_command`] (the reject message; by
///   default `kubectl rollout restart`) and [`Workload::apply_held_now`] (a hold's advice; by
///   default the restart command).
pub trait Workload: Sync {
    /// What the policy reads and writes of the kind.
    fn declared(&self) -> &'static Kind;

    /// Whether the policy may hold this object (`new`, as stored `old`): a kind declines one
    /// whose controller would roll or scale its pods while held, or that has no pod template
    /// of its own; the request is then accepted unchanged. It reads only declared fields.
    fn holds(&self, _old: &Value, _new: &Value) -> bool {
        true
    }

    /// Whether a rollout is under way, read from `oldObject` and its `status` object, when
    /// its control may roll at all ([`Control::may_roll`]): a binding change then joins it.
    fn rolling_out(&self, old: &Value, status: &Value) -> bool;

    /// Why this binding change must roll now instead of waiting, if it must.
    fn must_roll_now(&self, change: &Change) -> Option<String> {
        let kind = self.declared();
        kind.control.roll_now(change, kind.kind)
    }

    /// The command that restarts every pod of a workload that is not held now, which a refusal
    /// (`mode: reject`) gives: by default `kubectl rollout restart`.
    fn restart_command(&self, namespace: &str, name: &str) -> String {
        kubectl_rollout("restart", self.declared(), namespace, name)
    }

    /// The command that applies held binding changes now.
    fn apply_held_now(&self, namespace: &str, name: &str) -> String {
        self.restart_command(namespace, name)
    }
}

/// What every kind does with its declaration: read from [`Kind`] and its [`Control`].
impl dyn Workload + '_ {
    /// `kind` as the API names it.
    pub fn kind(&self) -> &'static str {
        self.declared().kind
    }

    /// The field the hold replaces, as object keys.
    pub fn control_path(&self) -> &'static [&'static str] {
        self.declared().control.path
    }

    /// The annotation that remembers the replaced control.
    pub fn remembered_annotation(&self) -> &'static str {
        self.declared().remembered
    }

    /// The control as the object has it.
    pub fn control<'a>(&self, object: &'a Value) -> Option<&'a Value> {
        self.declared().control.of(object)
    }

    /// The value of the control that holds the rollout.
    pub fn held_control(&self) -> Value {
        self.declared().control.held()
    }

    /// Whether this value of the control already keeps pods from rolling.
    pub fn stops_rollouts(&self, control: Option<&Value>) -> bool {
        self.declared().control.stops_rollouts(control)
    }

    /// The value the API server gives the control when it is absent.
    pub fn default_control(&self) -> Value {
        self.declared().control.default()
    }

    /// Whether the API server accepts this value of the control.
    pub fn accepts(&self, control: &Value) -> bool {
        self.declared().control.accepts(control)
    }

    /// Whether setting a rolling control on a held workload asks for the release.
    pub fn resume_releases(&self) -> bool {
        self.declared().control.resume_releases()
    }

    /// Whether a rollout is under way (read from `oldObject`): a binding change then joins it.
    pub fn rollout_in_progress(&self, old: &Value) -> bool {
        self.declared().control.may_roll(self.control(old))
            && old
                .get("status")
                .filter(|s| s.is_object())
                .is_some_and(|status| self.rolling_out(old, status))
    }
}

/// `kubectl rollout <verb> <kind>/<name> -n <namespace>`, for a kind kubectl's `rollout`
/// knows: its resource named by the singular kubectl takes, the declared kind in lower case.
pub fn kubectl_rollout(verb: &str, kind: &Kind, namespace: &str, name: &str) -> String {
    let resource = kind.kind.to_ascii_lowercase();
    [
        "kubectl rollout ",
        verb,
        " ",
        &resource,
        "/",
        name,
        " -n ",
        namespace,
    ]
    .concat()
}

impl std::fmt::Debug for dyn Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

impl std::fmt::Display for dyn Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind())
    }
}

impl PartialEq for dyn Workload {
    fn eq(&self, other: &Self) -> bool {
        self.kind() == other.kind()
    }
}

/// Every kind the policy holds.
pub fn kinds() -> impl Iterator<Item = &'static dyn Workload> + Clone {
    KINDS.into_iter()
}

/// The kind of an admission request, when the policy holds it.
pub fn of(group: &str, kind: &str) -> Option<&'static dyn Workload> {
    kinds().find(|w| w.declared().group == group && w.kind() == kind)
}

/// An integer the API declares (`int32`, `int64`); a string of digits too, as a custom
/// resource's schema may declare one.
fn integer(value: Option<&Value>) -> Option<i64> {
    let value = value?;
    value
        .as_i64()
        .or_else(|| value.as_str().and_then(|s| s.parse().ok()))
}

/// The controller has not yet observed the newest generation of the spec.
fn generation_stale(old: &Value, status: &Value) -> bool {
    matches!(
        (OBSERVED_GENERATION.integer(status), integer(READS_GENERATION.of(old))),
        (Some(observed), Some(generation)) if observed < generation
    )
}

/// `spec.replicas`, 1 when absent as the API server defaults it.
fn replicas(old: &Value) -> i64 {
    integer(READS_REPLICAS.of(old)).unwrap_or(1)
}

/// `metadata.generation`, which every kind reads to tell whether its controller caught up.
const READS_GENERATION: Field = Field::new(&["metadata", "generation"], Json::Integer);
const READS_REPLICAS: Field = Field::new(&["spec", "replicas"], Json::Integer);
/// `status.observedGeneration`, the generation the controller last acted on.
const OBSERVED_GENERATION: StatusMember = StatusMember::new("observedGeneration", Json::Integer);
const TEMPLATE: &[&str] = &["spec", "template"];

/// Every annotation the policy may leave on a workload of any kind it holds, each once: the
/// shared ones and each kind's remembered control.
pub fn marker_annotations() -> Vec<&'static str> {
    let remembered = kinds().map(|k| k.remembered_annotation());
    let mut keys: Vec<&'static str> = SHARED_ANNOTATIONS.into_iter().chain(remembered).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// Leaves `object` held: the kind's held control and every marker, and no release request (one
/// that did not release, `window` outside every window, is answered by dropping it). Returns
/// whether anything changed.
pub fn hold(object: &mut Value, workload: &dyn Workload, hold: &Hold) -> Result<bool, Unwritable> {
    let control = set_at(object, workload.control_path(), workload.held_control())?;
    let request = markers::remove_release_request(object)?;
    Ok(markers::write(object, hold)? | control | request)
}

/// A hold that remembers the API default control: what a workload created without a control
/// carries once held (test fixtures and tools start from it).
pub fn default_hold(workload: &dyn Workload, held_since: &str, pending: &str) -> Hold {
    Hold {
        remembered_key: workload.remembered_annotation(),
        remembered: workload.default_control().to_string(),
        held_since: held_since.into(),
        pending: pending.into(),
    }
}

/// Restores `restore`, if given (otherwise the control stays as the request sets it), and
/// removes every marker. Returns whether anything changed.
pub fn release(
    object: &mut Value,
    workload: &dyn Workload,
    restore: Option<Value>,
) -> Result<bool, Unwritable> {
    let control = match restore {
        Some(value) => set_at(object, workload.control_path(), value)?,
        None => false,
    };
    let remembered = kinds().map(|k| k.remembered_annotation());
    Ok(markers::remove(object, remembered)? | control)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_found_by_group_and_kind_only() {
        for Kind { group, kind, .. } in kinds().map(|w| w.declared()) {
            assert_eq!(of(group, kind).map(|w| w.kind()), Some(*kind));
            assert!(of("extensions", kind).is_none(), "{kind} in another group");
        }
        for kind in [
            "ReplicaSet",
            "ReplicationController",
            "CronJob",
            "Job",
            "Pod",
            "",
        ] {
            let groups = kinds().map(|w| w.declared().group).chain(["batch"]);
            for group in groups {
                assert!(of(group, kind).is_none(), "{group}/{kind}");
            }
        }
    }

    #[test]
    fn every_kind_declares_what_the_reader_and_a_release_need() {
        for w in kinds() {
            let k = w.declared();
            assert!(
                k.remembered.starts_with(markers::MARKER_PREFIX),
                "{}",
                k.kind
            );
            assert!(
                !k.template.is_empty() && k.control.path.len() > 1,
                "{}",
                k.kind
            );
            assert!(w.accepts(&w.default_control()), "{}", k.kind);
            assert!(w.stops_rollouts(Some(&w.held_control())), "{}", k.kind);
            // The resource is the plural a webhook rule names: lower case, not the kind.
            assert!(
                !k.resource.is_empty()
                    && k.resource == k.resource.to_lowercase()
                    && k.resource != k.kind.to_lowercase(),
                "{}",
                k.kind
            );
        }
    }

    #[test]
    fn every_marker_of_every_kind_has_the_prefix_the_reader_reads() {
        // The policy reads only the workload labels and annotations with this prefix.
        let keys = marker_annotations();
        for key in keys.iter().chain([&markers::HELD_LABEL]) {
            assert!(key.starts_with(markers::MARKER_PREFIX), "{key}");
        }
        for w in kinds() {
            assert!(keys.contains(&w.remembered_annotation()), "{w:?}");
        }
    }

    #[test]
    fn every_kind_gives_kubectl_commands_for_its_own_resource() {
        // Which verb restarts or resumes differs by kind (kubectl's `rollout` knows only the
        // built-in kinds); each command names the object as kubectl does.
        for w in kinds() {
            let object = [" ", &w.kind().to_ascii_lowercase(), "/orders -n shop"].concat();
            for command in [
                w.restart_command("shop", "orders"),
                w.apply_held_now("shop", "orders"),
            ] {
                assert!(
                    command.starts_with("kubectl ") && command.contains(&object),
                    "{command}"
                );
            }
        }
    }

    #[test]
    fn integers_read_as_numbers_or_strings_of_digits() {
        use serde_json::json;
        assert_eq!(integer(Some(&json!(3))), Some(3));
        assert_eq!(integer(Some(&json!("3"))), Some(3));
        assert_eq!(integer(Some(&json!("three"))), None);
        assert_eq!(integer(Some(&json!(1.5))), None);
        assert_eq!(integer(None), None);
    }
}
