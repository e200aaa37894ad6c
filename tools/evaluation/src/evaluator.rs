//! What policy-evaluator, the library inside kwctl and policy-server, does on every `validate`
//! call around the guest's own work: it builds the guest's payload from the admission request it
//! holds, and turns the guest's answer into an AdmissionResponse, diffing a mutated object
//! against the request's. The benchmarks count all of it as the path a user pays for.

use std::collections::HashMap;

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// An admission request as policy-evaluator holds it: the request's own fields typed, the
/// objects as JSON values, absent fields left out when it is written.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    pub uid: String,
    pub kind: GroupVersionKind,
    pub resource: GroupVersionResource,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_kind: Option<GroupVersionKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_resource: Option<GroupVersionResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_sub_resource: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub operation: String,
    pub user_info: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_object: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dry_run: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub options: Option<Value>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct GroupVersionResource {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl AdmissionRequest {
    /// An admission request (the `request` of an AdmissionReview) as policy-evaluator reads it.
    pub fn from_value(request: &Value) -> Result<AdmissionRequest, String> {
        AdmissionRequest::deserialize(request).map_err(|e| format!("not an admission request: {e}"))
    }
}

/// The answer as policy-evaluator decodes it: the Kubewarden SDK's `ValidationResponse`, field
/// for field (the SDK itself would bring a hundred crates into `make demo`'s build; a test in
/// `restage-gate-e2e` reads the SDK's own answers with it).
#[derive(Debug, Deserialize)]
pub struct ValidationResponse {
    pub accepted: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    pub mutated_object: Option<Value>,
    pub audit_annotations: Option<HashMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

/// The guest's payload, built anew on every call, and the request as the JSON value whose
/// `object` a mutated object is diffed against.
pub struct Payload {
    pub request: Value,
    pub text: String,
}

/// Builds the payload as policy-evaluator does: the request as a JSON value, then
/// `{request, settings}` as text.
pub fn payload(request: &AdmissionRequest, settings: &Value) -> Result<Payload, String> {
    let value = serde_json::to_value(request)
        .map_err(|e| format!("cannot write the request as a JSON value: {e}"))?;
    let text = serde_json::to_string(&json!({"request": request, "settings": settings}))
        .map_err(|e| format!("cannot write the validation params: {e}"))?;
    Ok(Payload {
        request: value,
        text,
    })
}

/// The AdmissionResponse policy-evaluator builds from the guest's answer.
#[derive(Debug)]
pub struct Response {
    pub allowed: bool,
    pub message: Option<String>,
    pub code: Option<u16>,
    /// The JSONPatch from the request's object to the mutated object, serialised and base64'd;
    /// none when the answer carries no mutated object or one equal to the request's.
    pub patch: Option<String>,
    pub warnings: Option<Vec<String>>,
    pub audit_annotations: Option<HashMap<String, String>>,
}

/// Decodes the guest's answer as a ValidationResponse and builds the response from it,
/// as policy-evaluator does: a mutated object is cloned out of the answer, diffed against the
/// request's object, and the patch serialised and base64'd.
pub fn response(request: &Value, answer: &[u8]) -> Result<Response, String> {
    let answer: ValidationResponse = serde_json::from_slice(answer)
        .map_err(|e| format!("cannot deserialize the policy's validation response: {e}"))?;
    let patch = match (answer.mutated_object.clone(), request.get("object")) {
        (None, _) => None,
        (Some(_), None) => {
            return Ok(Response {
                allowed: false,
                message: Some("the policy mutates a request without an object".into()),
                code: None,
                patch: None,
                warnings: None,
                audit_annotations: None,
            })
        }
        (Some(mutated), Some(object)) => {
            let diff = diff(object, &mutated);
            (!diff.0.is_empty()).then(|| encode(&diff))
        }
    };
    Ok(Response {
        allowed: answer.accepted,
        message: answer.message.clone(),
        code: answer.code,
        patch,
        warnings: answer.warnings.clone(),
        audit_annotations: answer.audit_annotations.clone(),
    })
}

/// The RFC 6902 patch from the request's object to the mutated one, as policy-evaluator
/// computes it.
pub(crate) fn diff(object: &Value, mutated: &Value) -> json_patch::Patch {
    json_patch::diff(object, mutated)
}

/// A patch as the AdmissionResponse carries it: serialised, then base64.
pub(crate) fn encode(patch: &impl Serialize) -> String {
    let bytes = serde_json::to_vec(patch).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Value {
        // any kind: the payload carries whatever the request says
        json!({"uid": "u1", "kind": {"group": "example.com", "version": "v1", "kind": "Widget"},
            "resource": {"group": "example.com", "version": "v1", "resource": "widgets"},
            "name": "app", "namespace": "cf", "operation": "UPDATE",
            "userInfo": {"username": "someone"},
            "object": {"metadata": {"name": "app"}, "spec": {"replicas": 2}},
            "oldObject": {"metadata": {"name": "app"}, "spec": {"replicas": 1}},
            "dryRun": false})
    }

    #[test]
    fn the_payload_carries_the_request_and_the_settings_as_written() {
        let typed = AdmissionRequest::from_value(&request()).unwrap();
        let settings = json!({"mode": "hold"});
        let payload = payload(&typed, &settings).unwrap();
        assert_eq!(payload.request, request());
        let sent: Value = serde_json::from_str(&payload.text).unwrap();
        assert_eq!(sent, json!({"request": request(), "settings": settings}));
    }

    /// The request as policy-evaluator holds it, after it has built the payload.
    fn held(request: &Value) -> Value {
        let typed = AdmissionRequest::from_value(request).unwrap();
        payload(&typed, &json!({})).unwrap().request
    }

    fn answered(request: &Value, answer: Value) -> Response {
        response(&held(request), answer.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn a_mutated_object_becomes_the_base64_patch_from_the_requests_object() {
        let mut mutated = request()["object"].clone();
        mutated["spec"]["paused"] = json!(true);
        let response = answered(
            &request(),
            json!({"accepted": true, "mutated_object": mutated,
                "warnings": ["held"], "audit_annotations": {"decision": "held"}}),
        );
        let patch = base64::engine::general_purpose::STANDARD
            .decode(response.patch.expect("a patch"))
            .unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&patch).unwrap(),
            json!([{"op": "add", "path": "/spec/paused", "value": true}])
        );
        assert!(response.allowed);
        assert_eq!(response.warnings, Some(vec!["held".to_string()]));
        assert_eq!(
            response.audit_annotations.unwrap()["decision"],
            "held".to_string()
        );
    }

    #[test]
    fn a_mutated_object_equal_to_the_requests_carries_no_patch() {
        let same = answered(
            &request(),
            json!({"accepted": true, "mutated_object": request()["object"]}),
        );
        assert_eq!((same.allowed, same.patch), (true, None));
    }

    #[test]
    fn a_refusal_carries_its_message_and_code() {
        let refused = answered(
            &request(),
            json!({"accepted": false, "message": "no", "code": 400}),
        );
        assert_eq!(
            (
                refused.allowed,
                refused.message,
                refused.code,
                refused.patch
            ),
            (false, Some("no".to_string()), Some(400), None)
        );
    }

    #[test]
    fn a_mutation_of_a_request_without_an_object_is_refused() {
        let mut delete = request();
        delete["operation"] = json!("DELETE");
        delete["object"] = Value::Null;
        let response = answered(
            &delete,
            json!({"accepted": true, "mutated_object": {"a": 1}}),
        );
        assert!(!response.allowed);
        assert_eq!(response.patch, None);
    }

    #[test]
    fn an_answer_that_is_not_a_validation_response_is_an_error() {
        let error = response(&request(), b"{\"mutated_object\": 1}").unwrap_err();
        assert!(error.contains("validation response"), "{error}");
    }
}
