//! One AdmissionReview answered as policy-server answers `/validate/<policy-id>`: the module
//! run on a fresh instance, its answer framed as policy-evaluator frames it (the payload and the
//! JSONPatch diff are `restage-gate-evaluation`'s), then policy-server's rules for the policy's
//! mode, `allowedToMutate` and custom message.

use std::collections::BTreeMap;

use base64::Engine as _;
use restage_gate_evaluation::evaluator::{self, AdmissionRequest};
use serde::Serialize;
use serde_json::{json, Value};

use crate::policies::{Policy, PolicyMode};

/// An admission/v1 AdmissionResponse as policy-evaluator writes it
/// (`crates/policy-evaluator/src/admission_response.rs`): `auditAnnotations` and `warnings`
/// are always written, `null` when the policy gave none.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<PatchType>,
    /// The JSONPatch, serialised and base64'd.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    pub audit_annotations: Option<BTreeMap<String, String>>,
    pub warnings: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum PatchType {
    JSONPatch,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Status {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Details>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Details {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
}

/// A cause of a refusal; policy-evaluator writes all three fields, `null` when unset.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Cause {
    pub reason: Option<String>,
    pub message: Option<String>,
    pub field: Option<String>,
}

impl AdmissionResponse {
    /// What policy-evaluator answers when the module cannot be called or its answer cannot be
    /// read (`reject_internal_server_error`): a refusal, not an HTTP error.
    fn internal_error(uid: &str, message: &str) -> AdmissionResponse {
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: false,
            patch_type: None,
            patch: None,
            status: Some(Status {
                message: Some(format!("internal server error: {message}")),
                details: None,
                code: Some(500),
            }),
            audit_annotations: None,
            warnings: None,
        }
    }

    fn from_policy(uid: &str, answer: evaluator::Response) -> AdmissionResponse {
        let status = (answer.message.is_some() || answer.code.is_some()).then_some(Status {
            message: answer.message,
            details: None,
            code: answer.code,
        });
        AdmissionResponse {
            uid: uid.to_string(),
            allowed: answer.allowed,
            patch_type: answer.patch.as_ref().map(|_| PatchType::JSONPatch),
            patch: answer.patch,
            status,
            audit_annotations: answer.audit_annotations.map(|a| a.into_iter().collect()),
            warnings: answer.warnings,
        }
    }

    /// How many operations the patch holds (0 without one).
    pub fn patch_ops(&self) -> usize {
        let Some(patch) = &self.patch else { return 0 };
        base64::engine::general_purpose::STANDARD
            .decode(patch)
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Vec<Value>>(&bytes).ok())
            .map_or(0, |ops| ops.len())
    }

    pub fn message(&self) -> Option<&str> {
        self.status.as_ref()?.message.as_deref()
    }

    /// The AdmissionReview that carries it back to the API server.
    pub fn review(&self) -> Value {
        json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "response": self})
    }
}

/// What the API server is told, and what the policy itself answered (they differ in monitor
/// mode and when a policy that may not mutate does).
#[derive(Debug)]
pub struct Evaluation {
    pub response: AdmissionResponse,
    pub policy_answer: AdmissionResponse,
}

/// Evaluates `request` with `policy` on an instance of its own, made for this request and
/// dropped after it: policy-server rehydrates its pre-compiled module on every `validate`, so no
/// state outlives a request (`crates/policy-server/src/evaluation/evaluation_environment.rs`,
/// `rehydrate` and `validate_policy`). An instance that cannot be made is an error (policy-server
/// answers HTTP 500); a call that fails is a refusal, as policy-evaluator answers it
/// (`crates/policy-evaluator/src/runtimes/wapc/runtime.rs`).
pub fn evaluate(policy: &Policy, request: &AdmissionRequest) -> Result<Evaluation, String> {
    let instance = policy.module.instance()?;
    let uid = request.uid.as_str();
    let policy_answer = match evaluator::payload(request, &policy.settings) {
        Err(e) => AdmissionResponse::internal_error(uid, &e),
        Ok(payload) => match instance.call("validate", payload.text.as_bytes()) {
            Err(e) => AdmissionResponse::internal_error(uid, &e),
            Ok(answer) => match evaluator::response(&payload.request, &answer) {
                Ok(answer) => AdmissionResponse::from_policy(uid, answer),
                Err(e) => AdmissionResponse::internal_error(uid, &e),
            },
        },
    };
    let response = apply_policy_rules(policy, policy_answer.clone());
    Ok(Evaluation {
        response,
        policy_answer,
    })
}

/// policy-server's rules on top of the policy's answer, in its order: monitor mode, then the
/// mutation constraint, then the custom message
/// (`crates/policy-evaluator/src/admission_response_handler.rs`, `process_response`).
pub fn apply_policy_rules(policy: &Policy, answer: AdmissionResponse) -> AdmissionResponse {
    let answer = match policy.mode {
        // Always let the request through unchanged; the status would only matter on a refusal.
        PolicyMode::Monitor => AdmissionResponse {
            allowed: true,
            patch_type: None,
            patch: None,
            status: None,
            ..answer
        },
        PolicyMode::Protect if !policy.allowed_to_mutate && answer.patch.is_some() => {
            // A policy that may not mutate sits behind a validating webhook, which must not
            // answer with a patch at all: the request is refused instead.
            AdmissionResponse {
                allowed: false,
                patch_type: None,
                patch: None,
                status: Some(Status {
                    message: Some(not_allowed_to_mutate(&policy.id)),
                    details: None,
                    code: None,
                }),
                ..answer
            }
        }
        PolicyMode::Protect => answer,
    };
    match &policy.message {
        Some(custom) if !answer.allowed => {
            let status = answer.status.clone().unwrap_or_default();
            let mut causes = status.details.map(|d| d.causes).unwrap_or_default();
            causes.push(Cause {
                message: Some(status.message.unwrap_or_default()),
                ..Cause::default()
            });
            AdmissionResponse {
                status: Some(Status {
                    message: Some(custom.clone()),
                    details: Some(Details { causes }),
                    code: status.code,
                }),
                ..answer
            }
        }
        _ => answer,
    }
}

/// policy-server's words for a mutation by a policy that may not mutate.
pub fn not_allowed_to_mutate(policy_id: &str) -> String {
    format!(
        "Request rejected by policy {policy_id}. The policy attempted to mutate the request, \
         but it is currently configured to not allow mutations."
    )
}

/// The one line logged for each request: the policy, the object, the operation, and what the
/// API server was told; in monitor mode also what the policy itself decided.
pub fn log_line(policy: &Policy, request: &AdmissionRequest, evaluation: &Evaluation) -> String {
    let response = &evaluation.response;
    let mut line = format!(
        "policy={} mode={} kind={} namespace={} name={} operation={} uid={} allowed={} \
         patch_ops={} message={}",
        policy.id,
        policy.mode.name(),
        request.kind.kind,
        request.namespace.as_deref().unwrap_or("-"),
        request.name.as_deref().unwrap_or("-"),
        request.operation,
        request.uid,
        response.allowed,
        response.patch_ops(),
        quoted(response.message()),
    );
    if policy.mode == PolicyMode::Monitor {
        let answer = &evaluation.policy_answer;
        line.push_str(&format!(
            " | monitor: the policy answered allowed={} patch_ops={} message={}",
            answer.allowed,
            answer.patch_ops(),
            quoted(answer.message()),
        ));
    }
    line
}

/// A message on one line, quoted and escaped; `-` for none.
fn quoted(message: Option<&str>) -> String {
    message.map_or_else(|| "-".to_string(), |m| format!("{m:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use restage_gate_e2e::host::Module;

    /// The smallest module wasmtime compiles; these tests never call it.
    fn module() -> Module {
        Module::from_bytes(b"\0asm\x01\0\0\0").expect("an empty module compiles")
    }

    fn policy(mode: PolicyMode, allowed_to_mutate: bool, message: Option<&str>) -> Policy {
        Policy {
            id: "restage-gate".into(),
            module: module(),
            settings: json!({}),
            mode,
            allowed_to_mutate,
            message: message.map(str::to_string),
        }
    }

    fn answer(allowed: bool, patch: bool) -> AdmissionResponse {
        AdmissionResponse {
            uid: "u1".into(),
            allowed,
            patch_type: patch.then_some(PatchType::JSONPatch),
            patch: patch.then(|| "W10=".to_string()),
            status: (!allowed).then(|| Status {
                message: Some("refused: restart the app".into()),
                details: None,
                code: Some(400),
            }),
            audit_annotations: Some(BTreeMap::from([("decision".into(), "held".into())])),
            warnings: Some(vec!["held".into()]),
        }
    }

    #[test]
    fn monitor_mode_allows_unchanged_and_keeps_warnings_and_audit_annotations() {
        for allowed_to_mutate in [true, false] {
            for original in [answer(false, false), answer(true, true)] {
                let policy = policy(PolicyMode::Monitor, allowed_to_mutate, Some("custom"));
                let response = apply_policy_rules(&policy, original.clone());
                assert_eq!(
                    response,
                    AdmissionResponse {
                        allowed: true,
                        patch_type: None,
                        patch: None,
                        status: None,
                        ..original
                    }
                );
            }
        }
    }

    #[test]
    fn a_mutation_by_a_policy_that_may_not_mutate_is_refused_without_a_patch() {
        let response = apply_policy_rules(
            &policy(PolicyMode::Protect, false, None),
            answer(true, true),
        );
        assert!(!response.allowed);
        assert_eq!((response.patch, response.patch_type), (None, None));
        assert_eq!(
            response.status.and_then(|s| s.message).as_deref(),
            Some(
                "Request rejected by policy restage-gate. The policy attempted to mutate the \
                 request, but it is currently configured to not allow mutations."
            )
        );
        let mutating =
            apply_policy_rules(&policy(PolicyMode::Protect, true, None), answer(true, true));
        assert_eq!(mutating, answer(true, true));
    }

    #[test]
    fn a_custom_message_replaces_a_refusals_and_keeps_it_as_a_cause() {
        let response = apply_policy_rules(
            &policy(PolicyMode::Protect, false, Some("ask the platform team")),
            answer(false, false),
        );
        let written = serde_json::to_value(&response).unwrap();
        assert_eq!(
            written["status"],
            json!({"message": "ask the platform team", "code": 400, "details": {"causes": [
                {"reason": null, "message": "refused: restart the app", "field": null}]}})
        );
        let allowed = apply_policy_rules(
            &policy(PolicyMode::Protect, true, Some("ask the platform team")),
            answer(true, true),
        );
        assert_eq!(allowed, answer(true, true));
    }

    #[test]
    fn the_response_is_written_as_policy_evaluator_writes_it() {
        let mut bare = answer(true, false);
        bare.audit_annotations = None;
        bare.warnings = None;
        assert_eq!(
            bare.review(),
            json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1",
                "response": {"uid": "u1", "allowed": true,
                    "auditAnnotations": null, "warnings": null}})
        );
        let patched = serde_json::to_value(answer(true, true)).unwrap();
        assert_eq!(
            (&patched["patchType"], &patched["patch"]),
            (&json!("JSONPatch"), &json!("W10="))
        );
    }
}
