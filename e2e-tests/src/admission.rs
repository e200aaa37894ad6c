//! Admission responses the way kwctl and policy-server frame them: the policy answers a
//! ValidationResponse with the whole mutated object; the AdmissionResponse carries the JSON
//! patch from the request's object to it. (Requests are built by `restage_gate_testkit`.)

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::{json, Value};

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
    pub fn new(request: &Value, response: &Value) -> Outcome {
        let object = request.get("object").cloned().unwrap_or(Value::Null);
        let mutated = mutated_object(response);
        let patch = mutated
            .map(|m| serde_json::to_value(patch(&object, m)).unwrap_or_else(|_| json!([])))
            .and_then(|p| p.as_array().cloned())
            .unwrap_or_default();
        let text = |v: &Value| v.as_str().map(str::to_string);
        Outcome {
            allowed: response
                .get("accepted")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            message: response.get("message").and_then(text),
            patch,
            warnings: response
                .get("warnings")
                .and_then(Value::as_array)
                .map(|w| w.iter().filter_map(text).collect())
                .unwrap_or_default(),
            audit: response
                .get("audit_annotations")
                .and_then(Value::as_object)
                .map(|a| {
                    a.iter()
                        .filter_map(|(k, v)| Some((k.clone(), text(v)?)))
                        .collect()
                })
                .unwrap_or_default(),
            object: mutated.cloned().unwrap_or(object),
        }
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

/// The RFC 6902 patch from the request's object to the mutated one, as policy-evaluator
/// computes it.
fn patch(object: &Value, mutated: &Value) -> json_patch::Patch {
    json_patch::diff(object, mutated)
}

/// A patch as the AdmissionResponse carries it: serialised, then base64.
fn encode(patch: &impl serde::Serialize) -> String {
    let bytes = serde_json::to_vec(patch).unwrap_or_default();
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// What a policy server does with the bytes `validate` answered before the API server sees
/// them: decode the ValidationResponse and, when it carries a mutated object, diff the
/// request's object against it and encode the patch. An answer without one costs only its
/// decoding. Returns the encoded patch, if any.
pub fn handle_answer(request: &Value, answer: &[u8]) -> Result<Option<String>, String> {
    let response: Value =
        serde_json::from_slice(answer).map_err(|e| format!("the answer is not JSON: {e}"))?;
    let object = request.get("object").unwrap_or(&Value::Null);
    Ok(mutated_object(&response).map(|m| encode(&patch(object, m))))
}
