//! Policy settings. Read from raw JSON so that every refusal can name the exact
//! field (`maintenanceWindows[i].start`) and the value it refuses; unknown fields are refused, so
//! a typo cannot silently switch a feature off.

use serde_json::{Map, Value};

use crate::template::artefacts::ArtefactRules;
use crate::window::{parse_day, parse_time, Window};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Let the template through and hold the rollout (policy deployed with `mutating: true`).
    #[default]
    Defer,
    /// Refuse binding-only changes (policy deployed with `mutating: false`).
    Reject,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    pub maintenance_windows: Vec<Window>,
    pub artefacts: ArtefactRules,
}

const FIELDS: [&str; 4] = [
    "mode",
    "maintenanceWindows",
    "extraVolumePrefixes",
    "extraAnnotationPrefixes",
];
const WINDOW_FIELDS: [&str; 4] = ["days", "start", "end", "spreadMinutes"];

impl Settings {
    /// Reads the settings object; `null` (no settings) gives the defaults.
    pub fn from_value(value: &Value) -> Result<Settings, String> {
        let fields = match value {
            Value::Null => return Ok(Settings::default()),
            Value::Object(fields) => fields,
            other => {
                return Err(format!(
                    "settings: {} is not an object; give the settings as a map of {}",
                    show(other),
                    FIELDS.join(", ")
                ))
            }
        };
        refuse_unknown(fields, &FIELDS, "settings.", "the settings fields are")?;
        Ok(Settings {
            mode: mode(fields.get("mode"))?,
            maintenance_windows: windows(fields.get("maintenanceWindows"))?,
            artefacts: ArtefactRules {
                extra_volume_prefixes: prefixes(
                    fields.get("extraVolumePrefixes"),
                    "extraVolumePrefixes",
                    "a volume-name prefix such as \"binding-\"",
                    |b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-',
                    "lowercase letters, digits and '-' (volume names are DNS labels)",
                )?,
                extra_annotation_prefixes: prefixes(
                    fields.get("extraAnnotationPrefixes"),
                    "extraAnnotationPrefixes",
                    "an annotation-key prefix such as \"bindings.example.com/\"",
                    |b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'/'),
                    "letters, digits, '-', '.', '_' and '/'",
                )?,
            },
        })
    }
}

fn refuse_unknown(
    fields: &Map<String, Value>,
    known: &[&str],
    path: &str,
    known_are: &str,
) -> Result<(), String> {
    match fields.keys().find(|k| !known.contains(&k.as_str())) {
        Some(unknown) => Err(format!(
            "{path}{unknown}: unknown field; {known_are} {}",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

fn mode(value: Option<&Value>) -> Result<Mode, String> {
    match value {
        None | Some(Value::Null) => Ok(Mode::Defer),
        Some(Value::String(s)) if s == "defer" => Ok(Mode::Defer),
        Some(Value::String(s)) if s == "reject" => Ok(Mode::Reject),
        Some(other) => Err(format!(
            "settings.mode: {} is not a mode; use \"defer\" or \"reject\"",
            show(other)
        )),
    }
}

fn windows(value: Option<&Value>) -> Result<Vec<Window>, String> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(format!(
            "settings.maintenanceWindows: {} is not a list; give a list of {{days, start, end}}",
            show(other)
        ))
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, w)| window(w, &format!("settings.maintenanceWindows[{i}]")))
        .collect()
}

fn window(value: &Value, path: &str) -> Result<Window, String> {
    let Value::Object(fields) = value else {
        return Err(format!(
            "{path}: {} is not a window; give {{days: [Mon, …], start: \"HH:MM\", end: \"HH:MM\"}}",
            show(value)
        ));
    };
    refuse_unknown(fields, &WINDOW_FIELDS, &format!("{path}."), "a window has")?;
    let days = match fields.get("days") {
        Some(Value::Array(days)) if !days.is_empty() => days,
        Some(Value::Array(_)) => {
            return Err(format!(
            "{path}.days: [] names no day; list at least one of Mon, Tue, Wed, Thu, Fri, Sat, Sun"
        ))
        }
        None => {
            return Err(format!(
                "{path}.days: missing; list the days of the window, e.g. [Sat, Sun]"
            ))
        }
        Some(other) => {
            return Err(format!(
                "{path}.days: {} is not a list of days; write e.g. [Sat, Sun]",
                show(other)
            ))
        }
    };
    let days = days
        .iter()
        .enumerate()
        .map(|(i, d)| {
            d.as_str().and_then(parse_day).ok_or_else(|| {
                format!(
                    "{path}.days[{i}]: {} is not a day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun",
                    show(d)
                )
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let time = |key: &str| {
        match fields.get(key) {
        None => Err(format!(
            "{path}.{key}: missing; give a UTC time of day as \"HH:MM\""
        )),
        Some(v) => v.as_str().and_then(parse_time).ok_or_else(|| {
            format!(
                "{path}.{key}: {} is not a time of day; write \"HH:MM\" between \"00:00\" and \"23:59\" (UTC)",
                show(v)
            )
        }),
    }
    };
    let window = Window::new(&days, time("start")?, time("end")?);
    let spread = spread_minutes(fields.get("spreadMinutes"), &window, path)?;
    Ok(window.spread_over(spread))
}

/// `spreadMinutes`: 1 up to the window's length; absent or null is 1 (no spread).
fn spread_minutes(value: Option<&Value>, window: &Window, path: &str) -> Result<u16, String> {
    let length = window.length();
    let range = format!("a whole number of minutes from 1 to {length}, the window's length");
    match value {
        None | Some(Value::Null) => Ok(1),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(0) => Err(format!(
                "{path}.spreadMinutes: 0 spreads over no minute; give {range}, or leave it out to release everything at the window's start"
            )),
            Some(m) if m <= u64::from(length) => Ok(m as u16),
            Some(m) => Err(format!(
                "{path}.spreadMinutes: {m} is longer than the window ({window}, {length} minutes); give {range}, or lengthen the window"
            )),
            None => Err(format!(
                "{path}.spreadMinutes: {n} is not a count of minutes; give {range}"
            )),
        },
        Some(other) => Err(format!(
            "{path}.spreadMinutes: {} is not a count of minutes; give {range}, without quotes",
            show(other)
        )),
    }
}

fn prefixes(
    value: Option<&Value>,
    field: &str,
    example: &str,
    allowed: impl Fn(u8) -> bool,
    allowed_text: &str,
) -> Result<Vec<String>, String> {
    let list = match value {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(format!(
                "settings.{field}: {} is not a list; give a list of strings, each {example}",
                show(other)
            ))
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, p)| match p.as_str() {
            Some("") => Err(format!(
                "settings.{field}[{i}]: \"\" is empty and would match everything; give {example}"
            )),
            Some(s) if s.bytes().all(&allowed) => Ok(s.to_string()),
            _ => Err(format!(
                "settings.{field}[{i}]: {} is not a valid prefix; use {allowed_text}",
                show(p)
            )),
        })
        .collect()
}

/// A value as JSON, so strings show their quotes and numbers do not.
fn show(value: &Value) -> String {
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_settings_mean_defer_without_windows() {
        for value in [Value::Null, json!({})] {
            assert_eq!(Settings::from_value(&value), Ok(Settings::default()));
        }
    }

    #[test]
    fn full_settings_are_read() {
        let settings = Settings::from_value(&json!({
            "mode": "reject",
            "maintenanceWindows": [{"days": ["Sat", "Sun"], "start": "02:00", "end": "04:00"}],
            "extraVolumePrefixes": ["acme-binding-"],
            "extraAnnotationPrefixes": ["bindings.acme.example/"],
        }))
        .expect("valid settings");
        assert_eq!(settings.mode, Mode::Reject);
        assert_eq!(
            settings.maintenance_windows,
            [Window::new(&[5, 6], 120, 240)]
        );
        assert_eq!(settings.artefacts.extra_volume_prefixes, ["acme-binding-"]);
        assert_eq!(
            settings.artefacts.extra_annotation_prefixes,
            ["bindings.acme.example/"]
        );
    }

    #[test]
    fn a_spread_is_read_up_to_the_windows_length() {
        let window = |extra: Value| {
            let mut w = json!({"days": ["Wed"], "start": "22:00", "end": "01:00"});
            w.as_object_mut()
                .expect("an object")
                .extend(extra.as_object().cloned().unwrap_or_default());
            Settings::from_value(&json!({ "maintenanceWindows": [w] }))
                .map(|s| s.maintenance_windows)
        };
        let plain = Window::new(&[2], 1320, 60);
        assert_eq!(window(json!({})), Ok(vec![plain.clone()]));
        assert_eq!(
            window(json!({"spreadMinutes": null})),
            Ok(vec![plain.clone()])
        );
        assert_eq!(window(json!({"spreadMinutes": 1})), Ok(vec![plain.clone()]));
        for minutes in [30, 180] {
            assert_eq!(
                window(json!({ "spreadMinutes": minutes })),
                Ok(vec![plain.clone().spread_over(minutes)])
            );
        }
        assert!(window(json!({"spreadMinutes": 181})).is_err());
        // A whole day spreads over up to a whole day.
        let day = json!({"maintenanceWindows": [{"days": ["Sun"], "start": "06:00", "end": "06:00", "spreadMinutes": 1440}]});
        assert!(Settings::from_value(&day).is_ok());
    }

    #[test]
    fn each_invalid_setting_is_refused_with_field_and_value() {
        let w = |window: Value| json!({"maintenanceWindows": [window]});
        let cases = [
            (json!([]), "settings: [] is not an object; give the settings as a map of mode, maintenanceWindows, extraVolumePrefixes, extraAnnotationPrefixes"),
            (json!({"maintenanceWindow": []}), "settings.maintenanceWindow: unknown field; the settings fields are mode, maintenanceWindows, extraVolumePrefixes, extraAnnotationPrefixes"),
            (json!({"mode": "Defer"}), "settings.mode: \"Defer\" is not a mode; use \"defer\" or \"reject\""),
            (json!({"mode": 1}), "settings.mode: 1 is not a mode; use \"defer\" or \"reject\""),
            (json!({"maintenanceWindows": "Sat"}), "settings.maintenanceWindows: \"Sat\" is not a list; give a list of {days, start, end}"),
            (json!({"maintenanceWindows": [3]}), "settings.maintenanceWindows[0]: 3 is not a window; give {days: [Mon, …], start: \"HH:MM\", end: \"HH:MM\"}"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": "04:00", "tz": "CET"})), "settings.maintenanceWindows[0].tz: unknown field; a window has days, start, end, spreadMinutes"),
            (w(json!({"start": "02:00", "end": "04:00"})), "settings.maintenanceWindows[0].days: missing; list the days of the window, e.g. [Sat, Sun]"),
            (w(json!({"days": [], "start": "02:00", "end": "04:00"})), "settings.maintenanceWindows[0].days: [] names no day; list at least one of Mon, Tue, Wed, Thu, Fri, Sat, Sun"),
            (w(json!({"days": "Sat", "start": "02:00", "end": "04:00"})), "settings.maintenanceWindows[0].days: \"Sat\" is not a list of days; write e.g. [Sat, Sun]"),
            (w(json!({"days": ["Sat", "Sunday"], "start": "02:00", "end": "04:00"})), "settings.maintenanceWindows[0].days[1]: \"Sunday\" is not a day; use Mon, Tue, Wed, Thu, Fri, Sat or Sun"),
            (w(json!({"days": ["Sat"], "end": "04:00"})), "settings.maintenanceWindows[0].start: missing; give a UTC time of day as \"HH:MM\""),
            (w(json!({"days": ["Sat"], "start": "25:00", "end": "04:00"})), "settings.maintenanceWindows[0].start: \"25:00\" is not a time of day; write \"HH:MM\" between \"00:00\" and \"23:59\" (UTC)"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": "4:00"})), "settings.maintenanceWindows[0].end: \"4:00\" is not a time of day; write \"HH:MM\" between \"00:00\" and \"23:59\" (UTC)"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": 4})), "settings.maintenanceWindows[0].end: 4 is not a time of day; write \"HH:MM\" between \"00:00\" and \"23:59\" (UTC)"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": "04:00", "spreadMinutes": 0})), "settings.maintenanceWindows[0].spreadMinutes: 0 spreads over no minute; give a whole number of minutes from 1 to 120, the window's length, or leave it out to release everything at the window's start"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": "04:00", "spreadMinutes": 121})), "settings.maintenanceWindows[0].spreadMinutes: 121 is longer than the window (Sat 02:00-04:00 UTC, 120 minutes); give a whole number of minutes from 1 to 120, the window's length, or lengthen the window"),
            (w(json!({"days": ["Sat"], "start": "22:00", "end": "00:00", "spreadMinutes": 1000})), "settings.maintenanceWindows[0].spreadMinutes: 1000 is longer than the window (Sat 22:00-00:00 UTC, 120 minutes); give a whole number of minutes from 1 to 120, the window's length, or lengthen the window"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": "04:00", "spreadMinutes": "30"})), "settings.maintenanceWindows[0].spreadMinutes: \"30\" is not a count of minutes; give a whole number of minutes from 1 to 120, the window's length, without quotes"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": "04:00", "spreadMinutes": 7.5})), "settings.maintenanceWindows[0].spreadMinutes: 7.5 is not a count of minutes; give a whole number of minutes from 1 to 120, the window's length"),
            (w(json!({"days": ["Sat"], "start": "02:00", "end": "04:00", "spreadMinutes": -5})), "settings.maintenanceWindows[0].spreadMinutes: -5 is not a count of minutes; give a whole number of minutes from 1 to 120, the window's length"),
            (json!({"extraVolumePrefixes": "acme-"}), "settings.extraVolumePrefixes: \"acme-\" is not a list; give a list of strings, each a volume-name prefix such as \"binding-\""),
            (json!({"extraVolumePrefixes": [""]}), "settings.extraVolumePrefixes[0]: \"\" is empty and would match everything; give a volume-name prefix such as \"binding-\""),
            (json!({"extraVolumePrefixes": ["Acme_"]}), "settings.extraVolumePrefixes[0]: \"Acme_\" is not a valid prefix; use lowercase letters, digits and '-' (volume names are DNS labels)"),
            (json!({"extraAnnotationPrefixes": ["ok/", ""]}), "settings.extraAnnotationPrefixes[1]: \"\" is empty and would match everything; give an annotation-key prefix such as \"bindings.example.com/\""),
            (json!({"extraAnnotationPrefixes": ["a b"]}), "settings.extraAnnotationPrefixes[0]: \"a b\" is not a valid prefix; use letters, digits, '-', '.', '_' and '/'"),
            (json!({"extraAnnotationPrefixes": [7]}), "settings.extraAnnotationPrefixes[0]: 7 is not a valid prefix; use letters, digits, '-', '.', '_' and '/'"),
        ];
        for (value, want) in cases {
            assert_eq!(
                Settings::from_value(&value),
                Err(want.to_string()),
                "{value}"
            );
        }
    }
}
