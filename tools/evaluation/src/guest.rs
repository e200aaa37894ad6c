//! A Kubewarden policy's waPC functions, called the way kwctl and policy-server call them,
//! whichever WebAssembly runtime hosts the module.

use serde_json::{json, Value};

use crate::admission::Outcome;

/// A loaded policy module. A runtime provides `call`; the rest is the protocol on top of it.
pub trait Guest {
    /// Calls one waPC function of the module and returns what the guest answered.
    fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>, String>;

    /// `validate` on a ValidationRequest (`{settings, request}`); the ValidationResponse.
    fn validate(&self, validation_request: &Value) -> Result<Value, String> {
        let bytes = serde_json::to_vec(validation_request).map_err(|e| e.to_string())?;
        call_json(self, "validate", &bytes)
    }

    /// `validate_settings`; `Ok(None)` when valid, `Ok(Some(message))` when refused.
    fn validate_settings(&self, settings: &Value) -> Result<Option<String>, String> {
        let bytes = serde_json::to_vec(settings).map_err(|e| e.to_string())?;
        let response = call_json(self, "validate_settings", &bytes)?;
        match response.get("valid").and_then(Value::as_bool) {
            Some(true) => Ok(None),
            Some(false) => Ok(Some(
                response["message"].as_str().unwrap_or_default().to_string(),
            )),
            None => Err(format!("validate_settings answered {response}")),
        }
    }

    fn protocol_version(&self) -> Result<Value, String> {
        call_json(self, "protocol_version", b"")
    }

    /// What `kwctl run` does with one admission request: settings the policy refuses are an
    /// error, otherwise the policy's answer framed as the API server sees it.
    fn run(&self, settings: &Value, request: &Value) -> Result<Outcome, String> {
        if let Some(message) = self.validate_settings(settings)? {
            return Err(format!("settings refused: {message}"));
        }
        let response = self.validate(&json!({"settings": settings, "request": request}))?;
        Ok(Outcome::new(request, &response))
    }
}

fn call_json<G: Guest + ?Sized>(
    guest: &G,
    function: &str,
    payload: &[u8],
) -> Result<Value, String> {
    let out = guest.call(function, payload)?;
    serde_json::from_slice(&out)
        .map_err(|e| format!("{function} answered something that is not JSON: {e}"))
}
