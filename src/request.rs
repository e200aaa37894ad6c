//! One request answered: read as the policy's plan says, decided, and the answer written
//! around the request's own text.

use crate::admission::{read_plan, Admission};
use crate::clock::UtcTime;
use crate::decision::decide;
use crate::response::{respond, unreadable};
use crate::settings::Settings;
use crate::workload;
use raw::{write_answer, Request};

/// The whole evaluation of one request at `now`: read, decide, respond. The answer's bytes, as
/// `validate` returns them.
pub fn answer(payload: &[u8], now: UtcTime) -> Vec<u8> {
    let Some(Request {
        settings,
        operation,
        group,
        kind,
        sub_resource,
        namespace,
        name,
        mut object,
        old_object,
    }) = raw::read(payload, &read_plan())
    else {
        return write_answer(&unreadable("the payload is not a ValidationRequest"), None);
    };
    let settings = match Settings::from_value(&settings) {
        Ok(settings) => settings,
        Err(message) => return write_answer(&unreadable(&message), None),
    };
    let template_path = workload::of(&group, &kind).map_or(&[][..], |w| w.declared().template);
    let decision = decide(
        &Admission {
            operation: &operation,
            group: &group,
            kind: &kind,
            sub_resource: &sub_resource,
            namespace: &namespace,
            name: &name,
            object: &object.read,
            old_object: &old_object.read,
            template: object.template(template_path),
            old_template: old_object.template(template_path),
        },
        &settings,
        now,
    );
    let (answer, changed) = respond(decision, &mut object.read, &namespace, &name);
    write_answer(&answer, changed.then_some(&object))
}
