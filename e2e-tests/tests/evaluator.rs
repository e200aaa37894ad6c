//! The benchmarks decode the policy's answers as policy-evaluator does, as the Kubewarden SDK's
//! ValidationResponse, with a type of their own that mirrors it field for field: it must read
//! every answer as the SDK's type reads it.

use std::collections::HashMap;

use kubewarden_policy_sdk::response::ValidationResponse as SdkResponse;
use restage_gate_e2e::host::policy_under_test;
use restage_gate_e2e::workloads::cases;
use restage_gate_evaluation::evaluator::{payload, AdmissionRequest, ValidationResponse};
use restage_gate_evaluation::guest::Guest;
use serde_json::{json, Value};

type Fields = (
    bool,
    Option<String>,
    Option<u16>,
    Option<Value>,
    Option<HashMap<String, String>>,
    Option<Vec<String>>,
);

fn read_by_both(answer: &[u8]) -> (Fields, Fields) {
    let sdk: SdkResponse = serde_json::from_slice(answer).expect("the SDK reads it");
    let ours: ValidationResponse = serde_json::from_slice(answer).expect("the mirror reads it");
    (
        (
            sdk.accepted,
            sdk.message,
            sdk.code,
            sdk.mutated_object,
            sdk.audit_annotations,
            sdk.warnings,
        ),
        (
            ours.accepted,
            ours.message,
            ours.code,
            ours.mutated_object,
            ours.audit_annotations,
            ours.warnings,
        ),
    )
}

#[test]
fn the_policys_answer_to_every_benchmark_case_reads_as_the_sdk_reads_it() {
    let policy = policy_under_test();
    for case in cases() {
        let request = AdmissionRequest::from_value(&case.payload["request"]).expect("a request");
        let payload = payload(&request, &case.payload["settings"]).expect("a payload");
        let answer = policy
            .call("validate", payload.text.as_bytes())
            .expect("validate");
        let (sdk, ours) = read_by_both(&answer);
        assert_eq!(ours, sdk, "{}", case.name);
    }
}

#[test]
fn an_answer_with_every_field_set_reads_as_the_sdk_reads_it() {
    let answer = SdkResponse {
        accepted: false,
        message: Some("refused".into()),
        code: Some(400),
        mutated_object: Some(json!({"spec": {"paused": true}})),
        audit_annotations: Some(HashMap::from([("decision".into(), "rejected".into())])),
        warnings: Some(vec!["a warning".into()]),
    };
    let (sdk, ours) = read_by_both(&serde_json::to_vec(&answer).expect("serialisable"));
    assert_eq!(ours, sdk);
    assert_eq!(ours.2, Some(400));
}
