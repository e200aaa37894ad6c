//! Admission requests in, admission responses out, the way kwctl and policy-server frame them:
//! the policy answers a ValidationResponse with the whole mutated object; the AdmissionResponse
//! carries the JSON patch from the request's object to it.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{json, Value};

use crate::evaluator::{diff, encode};

/// The `request` of an AdmissionReview file, or the file itself when it is a bare request
/// (`kwctl run --request-path` accepts both).
pub fn read_request(text: &str) -> Result<Value, String> {
    let doc: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    match doc.get("request") {
        Some(request) if request.is_object() => Ok(request.clone()),
        _ if doc.get("operation").is_some() => Ok(doc),
        _ => Err("neither an AdmissionReview nor an admission request".into()),
    }
}

/// `read_request` on a file; errors name the file.
pub fn read_request_file(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    read_request(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// What the policy's ValidationResponse means for the API server.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub allowed: bool,
    pub message: Option<String>,
    /// RFC 6902 operations from the request's object to the mutated object.
    pub patch: Vec<Value>,
    pub warnings: Vec<String>,
    pub audit: BTreeMap<String, String>,
    /// The object as stored: the mutated one, or the request's own.
    pub object: Value,
}

impl Outcome {
    /// From the policy's ValidationResponse, as policy-evaluator builds the AdmissionResponse.
    pub fn new(request: &Value, response: &Value) -> Outcome {
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let mutated = mutated_object(response);
        let patch = mutated
            .map(|m| serde_json::to_value(diff(&object, m)).unwrap_or_else(|_| json!([])))
            .and_then(|p| p.as_array().cloned())
            .unwrap_or_default();
        Outcome {
            allowed: response
                .get("accepted")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            message: response.get("message").and_then(text),
            patch,
            warnings: strings(response.get("warnings")),
            audit: string_map(response.get("audit_annotations")),
            object: mutated.cloned().unwrap_or(object),
        }
    }

    /// From an AdmissionResponse, as `kwctl run` prints it: the patch applied to the request's
    /// object gives the stored object.
    pub fn from_admission_response(request: &Value, response: &Value) -> Result<Outcome, String> {
        let allowed = response
            .get("allowed")
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("not an AdmissionResponse (no `allowed`): {response}"))?;
        let mut object = request.get("object").cloned().unwrap_or(Value::Null);
        let patch = match response.get("patch").and_then(Value::as_str) {
            None => Vec::new(),
            Some(encoded) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .map_err(|e| format!("patch: not base64: {e}"))?;
                let ops: Vec<Value> = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("patch: not a JSON array: {e}"))?;
                let patch: json_patch::Patch = serde_json::from_value(Value::Array(ops.clone()))
                    .map_err(|e| format!("patch: not a JSON patch: {e}"))?;
                json_patch::patch(&mut object, &patch)
                    .map_err(|e| format!("patch: does not apply to the request's object: {e}"))?;
                ops
            }
        };
        Ok(Outcome {
            allowed,
            message: response.pointer("/status/message").and_then(text),
            patch,
            warnings: strings(response.get("warnings")),
            audit: string_map(response.get("auditAnnotations")),
            object,
        })
    }

    pub fn decision(&self) -> &str {
        self.audit.get("decision").map_or(
            if self.allowed { "accepted" } else { "rejected" },
            String::as_str,
        )
    }

    /// The AdmissionResponse, as `kwctl run` prints it.
    pub fn admission_response(&self, uid: &str) -> Value {
        let mut response = json!({"uid": uid, "allowed": self.allowed});
        if let Some(message) = &self.message {
            response["status"] = json!({"message": message});
        }
        if !self.patch.is_empty() {
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(encode(&self.patch));
        }
        if !self.warnings.is_empty() {
            response["warnings"] = json!(self.warnings);
        }
        if !self.audit.is_empty() {
            response["auditAnnotations"] = json!(self.audit);
        }
        response
    }
}

fn mutated_object(response: &Value) -> Option<&Value> {
    response.get("mutated_object").filter(|m| !m.is_null())
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

fn strings(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .map(|l| l.iter().filter_map(text).collect())
        .unwrap_or_default()
}

fn string_map(map: Option<&Value>) -> BTreeMap<String, String> {
    map.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), text(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> Value {
        json!({"uid": "u1", "operation": "UPDATE",
            "object": {"metadata": {"name": "app"}, "spec": {"updateStrategy": {"type": "RollingUpdate"}}}})
    }

    #[test]
    fn an_admission_response_reads_back_as_the_outcome_it_was_made_from() {
        let mutated = json!({"metadata": {"name": "app", "labels": {"restage-gate.io/held": "true"}},
            "spec": {"updateStrategy": {"type": "OnDelete"}}});
        let responses = [
            json!({"accepted": true, "mutated_object": mutated, "warnings": ["held"],
                "audit_annotations": {"decision": "held", "pending": "+db"}}),
            json!({"accepted": false, "message": "refused: restart the app",
                "audit_annotations": {"decision": "rejected"}}),
            json!({"accepted": true}),
        ];
        for response in responses {
            let outcome = Outcome::new(&request(), &response);
            let printed = outcome.admission_response("u1");
            assert_eq!(
                Outcome::from_admission_response(&request(), &printed),
                Ok(outcome),
                "{printed}"
            );
        }
    }

    #[test]
    fn a_patch_that_does_not_apply_is_an_error_naming_it() {
        let ops = json!([{"op": "remove", "path": "/spec/missing"}]).to_string();
        let response = json!({"allowed": true,
            "patch": base64::engine::general_purpose::STANDARD.encode(ops)});
        let error = Outcome::from_admission_response(&request(), &response).unwrap_err();
        assert!(error.starts_with("patch: does not apply"), "{error}");
        let error =
            Outcome::from_admission_response(&request(), &json!({"uid": "u1"})).unwrap_err();
        assert!(error.contains("no `allowed`"), "{error}");
    }
}
