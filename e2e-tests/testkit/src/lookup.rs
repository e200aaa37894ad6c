//! Finding a kind's descriptor: every one, in the order of the policy's kinds table
//! (`restage_gate::workload::KINDS`), by kind, and by the object a fixture is. A kind the policy
//! holds without a descriptor (`kinds/`) fails every suite that asks for it.

use restage_gate::workload::{self, Workload};
use serde_json::Value;

use crate::descriptor::Descriptor;
use crate::kinds::DESCRIPTORS;

/// A descriptor for every kind the policy holds, in the order of its kinds table. A kind
/// without one is a test kit that does not know it yet: a loud failure.
pub fn every() -> Vec<&'static dyn Descriptor> {
    workload::kinds()
        .map(|w| {
            DESCRIPTORS
                .into_iter()
                .find(|d| d.name() == w.kind())
                .unwrap_or_else(|| {
                    panic!(
                        "no test-kit descriptor for {} (e2e-tests/testkit/src/kinds/)",
                        w.kind()
                    )
                })
        })
        .collect()
}

/// The descriptor of a kind the policy holds.
pub fn of_kind(kind: &dyn Workload) -> &'static dyn Descriptor {
    every()
        .into_iter()
        .find(|d| d.name() == kind.kind() && d.group() == kind.declared().group)
        .unwrap_or_else(|| panic!("restage-gate does not hold {}", kind.kind()))
}

/// The unbound workload of a kind the policy holds, as its descriptor gives it.
pub fn unbound(kind: &dyn Workload) -> Value {
    of_kind(kind).fixture()
}

/// The descriptor of the kind an object says it is (`apiVersion` and `kind`), if the policy
/// holds it.
pub fn of(object: &Value) -> Option<&'static dyn Descriptor> {
    every().into_iter().find(|d| {
        object["kind"] == d.name()
            && object["apiVersion"]
                .as_str()
                .is_none_or(|v| v == d.api_version())
    })
}

/// The descriptor of a fixture object, which is always of a kind the policy holds.
pub fn of_fixture(object: &Value) -> &'static dyn Descriptor {
    of(object).unwrap_or_else(|| {
        panic!(
            "not a kind restage-gate holds: apiVersion {}, kind {}",
            object["apiVersion"], object["kind"]
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_the_policy_holds_has_one_descriptor() {
        let names: Vec<&str> = every().iter().map(|d| d.name()).collect();
        let kinds: Vec<&str> = workload::kinds().map(|w| w.kind()).collect();
        assert_eq!(names, kinds);
        for d in every() {
            assert_eq!(
                of(&d.fixture()),
                Some(d),
                "{d:?}: its fixture is of its kind"
            );
        }
    }

    #[test]
    fn a_hold_patch_takes_the_fixture_to_the_held_control_and_a_restore_back() {
        for d in every() {
            let mut object = d.fixture();
            apply(&mut object, &d.hold_ops());
            assert_eq!(
                object.pointer(&d.control_path()),
                Some(&d.held_control()),
                "{d:?}"
            );
            apply(&mut object, &d.restore_ops());
            assert_eq!(
                object.pointer(&d.control_path()),
                Some(&d.default_control()),
                "{d:?}"
            );
        }
    }

    #[test]
    fn a_kind_holds_its_fixture_and_declines_each_object_it_says_it_declines() {
        for d in every() {
            let fixture = d.fixture();
            assert!(d.workload().holds(&fixture, &fixture), "{d:?}: its fixture");
            for declined in d.declined() {
                let object = (declined.edit)(fixture.clone());
                assert!(
                    !d.workload().holds(&fixture, &object) && !d.workload().holds(&object, &object),
                    "{d:?}: {}",
                    declined.title
                );
            }
        }
    }

    /// The ops the descriptors write: add, replace or remove of a member.
    fn apply(doc: &mut Value, ops: &[Value]) {
        for op in ops {
            let path = op["path"].as_str().expect("path");
            match op["op"].as_str() {
                Some("remove") => crate::edit::remove(doc, path),
                _ => crate::edit::set(doc, path, op["value"].clone()),
            }
        }
    }
}
