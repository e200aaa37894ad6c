//! `spec.updateStrategy`, the control of the kinds that can hold a rollout with `OnDelete`
//! (StatefulSet, DaemonSet): the strategy's shape, which the API server checks, and the
//! number rules of its `rollingUpdate` fields.

use serde_json::{json, Map, Value};

/// The replaced `spec.updateStrategy`, as JSON.
pub const ORIGINAL_STRATEGY_ANNOTATION: &str = "restage-gate.io/original-update-strategy";
/// `spec.updateStrategy`, where both kinds keep it.
pub const PATH: &[&str] = &["spec", "updateStrategy"];
const ON_DELETE: &str = "OnDelete";
const ROLLING_UPDATE: &str = "RollingUpdate";

/// What differs between the kinds held with `OnDelete`: what the API server gives and accepts.
#[derive(Debug)]
pub struct Strategy {
    /// The strategy the API server gives a workload that names none.
    pub default: fn() -> Value,
    /// The fields a `rollingUpdate` may have.
    pub rolling_fields: &'static [&'static str],
    /// Whether the API server accepts these `rollingUpdate` fields (all of them known).
    pub accepts_rolling_update: fn(&Map<String, Value>) -> bool,
}

impl Strategy {
    /// A strategy the API server accepts.
    pub fn accepts(&self, strategy: &Value) -> bool {
        accepts(strategy, self.rolling_fields, self.accepts_rolling_update)
    }
}

/// The whole strategy: the API server refuses `rollingUpdate` next to `OnDelete`.
pub fn on_delete() -> Value {
    json!({"type": ON_DELETE})
}

pub(super) fn is_on_delete(strategy: Option<&Value>) -> bool {
    strategy.and_then(|s| s.get("type")).and_then(Value::as_str) == Some(ON_DELETE)
}

/// `RollingUpdate`, named or implied by an absent type.
pub(super) fn is_rolling(strategy: Option<&Value>) -> bool {
    strategy
        .and_then(|s| s.get("type"))
        .and_then(Value::as_str)
        .is_none_or(|t| t == ROLLING_UPDATE)
}

/// A strategy the API server accepts: `{"type": "OnDelete"}`, or `RollingUpdate` with an
/// optional `rollingUpdate` whose fields each pass `field_ok`; no other keys anywhere.
fn accepts(
    strategy: &Value,
    rolling_fields: &[&str],
    fields_ok: impl Fn(&Map<String, Value>) -> bool,
) -> bool {
    let Some(strategy) = strategy.as_object() else {
        return false;
    };
    let known = strategy.keys().all(|k| k == "type" || k == "rollingUpdate");
    let rolling_update = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    known
        && match strategy.get("type").and_then(Value::as_str) {
            Some(ON_DELETE) => rolling_update.is_none(),
            Some(ROLLING_UPDATE) => match rolling_update {
                None => true,
                Some(Value::Object(fields)) => {
                    fields.keys().all(|k| rolling_fields.contains(&k.as_str())) && fields_ok(fields)
                }
                Some(_) => false,
            },
            _ => false,
        }
}

/// An int32 no less than `min`. Floats are refused even when whole: the API server's
/// int-or-string refuses `1.0`.
pub fn int32_at_least(value: &Value, min: i64) -> bool {
    value
        .as_i64()
        .filter(|_| !value.is_f64())
        .is_some_and(|n| (min..=i64::from(i32::MAX)).contains(&n))
}

/// A percentage string `N%` with `min <= N <= 100`.
pub fn percent_at_least(value: &Value, min: u32) -> bool {
    value
        .as_str()
        .and_then(|s| s.strip_suffix('%'))
        .filter(|digits| !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|digits| digits.parse::<u32>().ok())
        .is_some_and(|n| (min..=100).contains(&n))
}

/// The numeric value of an int-or-percent, for "not both zero" rules.
pub fn is_zero(value: Option<&Value>) -> bool {
    match value {
        Some(Value::Number(n)) => n.as_i64() == Some(0),
        Some(Value::String(s)) => {
            s.strip_suffix('%').and_then(|d| d.parse::<u32>().ok()) == Some(0)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_percentages_are_read_as_the_api_server_reads_them() {
        assert!(int32_at_least(&json!(0), 0));
        assert!(int32_at_least(&json!(2_147_483_647), 1));
        assert!(!int32_at_least(&json!(2_147_483_648_i64), 0));
        assert!(!int32_at_least(&json!(-1), 0));
        assert!(!int32_at_least(&json!(1.0), 0));
        assert!(!int32_at_least(&json!("1"), 0));
        assert!(percent_at_least(&json!("100%"), 1));
        assert!(percent_at_least(&json!("0%"), 0));
        assert!(!percent_at_least(&json!("0%"), 1));
        assert!(!percent_at_least(&json!("101%"), 0));
        assert!(!percent_at_least(&json!("%"), 0));
        assert!(!percent_at_least(&json!("-5%"), 0));
        assert!(!percent_at_least(&json!("5"), 0));
        assert!(is_zero(Some(&json!(0))) && is_zero(Some(&json!("0%"))));
        assert!(!is_zero(None) && !is_zero(Some(&json!(1))));
    }
}
