//! Policy metadata, as `kwctl annotate` embeds it: `metadata.yml` as JSON, with the module's
//! `protocolVersion` and the README as `io.kubewarden.policy.usage`, in the custom section
//! `io.kubewarden.metadata`; validated the way kwctl validates it.

use serde_json::{json, Map, Value};

pub const CUSTOM_SECTION: &str = "io.kubewarden.metadata";
pub const USAGE: &str = "io.kubewarden.policy.usage";
pub const TITLE: &str = "io.kubewarden.policy.title";
pub const VERSION: &str = "io.kubewarden.policy.version";
pub const SOURCE: &str = "io.kubewarden.policy.source";

/// Annotations a published Kubewarden policy carries.
pub const REQUIRED_ANNOTATIONS: [&str; 7] = [
    TITLE,
    VERSION,
    "io.kubewarden.policy.description",
    "io.kubewarden.policy.author",
    "io.kubewarden.policy.url",
    SOURCE,
    "io.kubewarden.policy.license",
];
const OPERATIONS: [&str; 5] = ["CREATE", "UPDATE", "DELETE", "CONNECT", "*"];
const EXECUTION_MODES: [&str; 4] = ["kubewarden-wapc", "opa", "gatekeeper", "wasi"];

/// `metadata.yml` as JSON.
pub fn read_yaml(text: &str) -> Result<Value, String> {
    let value: Value =
        serde_yaml::from_str(text).map_err(|e| format!("metadata.yml: not YAML: {e}"))?;
    if !value.is_object() {
        return Err("metadata.yml: not a map of fields".into());
    }
    Ok(value)
}

/// The protocol version `metadata.yml` declares (`protocolVersion`), which the annotation
/// records; kwctl records what the module's `protocol_version` answers, and the e2e suites
/// check that the two agree.
pub fn declared_protocol(metadata: &Value) -> Result<String, String> {
    metadata["protocolVersion"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| {
            "metadata.yml: protocolVersion is missing; declare the protocol the module speaks (v1)"
                .into()
        })
}

/// The metadata kwctl embeds: defaults filled in, the protocol version and the usage added.
pub fn annotated(metadata: &Value, protocol_version: &str, readme: &str) -> Result<Value, String> {
    let mut m = metadata.clone();
    m["protocolVersion"] = json!(protocol_version);
    for (key, default) in [
        ("mutating", json!(false)),
        ("backgroundAudit", json!(true)),
        ("contextAwareResources", json!([])),
        ("executionMode", json!("kubewarden-wapc")),
        ("policyType", json!("kubernetes")),
    ] {
        if m.get(key).is_none_or(Value::is_null) {
            m[key] = default;
        }
    }
    if !m["annotations"].is_object() {
        m["annotations"] = json!({});
    }
    m["annotations"][USAGE] = json!(readme);
    validate(&m)?;
    Ok(m)
}

/// kwctl's checks: required annotations, title an RFC 1123 name, semver version, rules well
/// formed, a known protocol version and execution mode; and the context-aware resources as
/// current Kubewarden declares them (`contextAwareResources`, a list of `{apiVersion, kind}`),
/// not the legacy boolean `contextAware`, which current Kubewarden ignores.
pub fn validate(m: &Value) -> Result<(), String> {
    if m.get("contextAware").is_some() {
        return Err("metadata: contextAware is the legacy field; declare contextAwareResources, the list of {apiVersion, kind} the policy reads ([] for none)".into());
    }
    let resources = m["contextAwareResources"].as_array();
    let well_formed = |r: &Value| {
        ["apiVersion", "kind"]
            .iter()
            .all(|k| r[*k].as_str().is_some_and(|v| !v.is_empty()))
    };
    if !resources.is_some_and(|list| list.iter().all(well_formed)) {
        return Err(format!(
            "metadata: contextAwareResources {} is not a list of {{apiVersion, kind}}",
            m["contextAwareResources"]
        ));
    }
    let annotations = m["annotations"]
        .as_object()
        .ok_or("metadata: annotations missing")?;
    for key in REQUIRED_ANNOTATIONS {
        match annotations.get(key).and_then(Value::as_str) {
            Some(v) if !v.trim().is_empty() => {}
            _ => {
                return Err(format!(
                    "metadata: annotation {key} is missing or empty; add it to metadata.yml"
                ))
            }
        }
    }
    let title = annotations[TITLE].as_str().unwrap_or_default();
    if !is_rfc1123_name(title) {
        return Err(format!(
            "metadata: {TITLE} {title:?} is not an RFC 1123 name (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit)"
        ));
    }
    let version = annotations[VERSION].as_str().unwrap_or_default();
    if !is_semver(version) {
        return Err(format!(
            "metadata: {VERSION} {version:?} is not a semantic version such as 1.2.3"
        ));
    }
    if m["protocolVersion"] != "v1" {
        return Err(format!("metadata: protocolVersion {} is not v1; the module's protocol_version answered something else", m["protocolVersion"]));
    }
    let mode = m["executionMode"].as_str().unwrap_or_default();
    if !EXECUTION_MODES.contains(&mode) {
        return Err(format!(
            "metadata: executionMode {mode:?} is not one of {}",
            EXECUTION_MODES.join(", ")
        ));
    }
    let rules = m["rules"]
        .as_array()
        .filter(|r| !r.is_empty())
        .ok_or("metadata: rules must be a non-empty list")?;
    for (i, rule) in rules.iter().enumerate() {
        for field in ["apiGroups", "apiVersions", "resources", "operations"] {
            let values = rule[field]
                .as_array()
                .filter(|v| !v.is_empty() && v.iter().all(Value::is_string));
            let Some(values) = values else {
                return Err(format!(
                    "metadata: rules[{i}].{field} must be a non-empty list of strings"
                ));
            };
            if field == "operations" {
                if let Some(bad) = values
                    .iter()
                    .filter_map(Value::as_str)
                    .find(|o| !OPERATIONS.contains(o))
                {
                    return Err(format!(
                        "metadata: rules[{i}].operations: {bad:?} is not one of {}",
                        OPERATIONS.join(", ")
                    ));
                }
            }
            let needs_entries = field == "apiVersions" || field == "resources";
            if needs_entries && values.iter().any(|v| v.as_str().is_some_and(str::is_empty)) {
                return Err(format!("metadata: rules[{i}].{field} has an empty entry"));
            }
        }
    }
    Ok(())
}

fn is_rfc1123_name(s: &str) -> bool {
    let ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| ok(b) || b == b'-')
        && s.bytes().next().is_some_and(ok)
        && s.bytes().last().is_some_and(ok)
}

pub fn is_semver(s: &str) -> bool {
    let core = s.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && (p.len() == 1 || !p.starts_with('0'))
        })
}

/// The module with `metadata` in its `io.kubewarden.metadata` custom section, replacing any
/// section of that name (annotating twice gives the same bytes as once).
pub fn embed(module: &[u8], metadata: &Value) -> Result<Vec<u8>, String> {
    let mut out = strip(module)?;
    let data = serde_json::to_vec(metadata).map_err(|e| e.to_string())?;
    let mut payload = leb128(CUSTOM_SECTION.len());
    payload.extend_from_slice(CUSTOM_SECTION.as_bytes());
    payload.extend_from_slice(&data);
    out.push(0);
    out.extend(leb128(payload.len()));
    out.extend(payload);
    Ok(out)
}

/// The embedded metadata, if the module is annotated.
pub fn embedded(module: &[u8]) -> Result<Option<Value>, String> {
    for s in sections(module)? {
        if s.name.as_deref() == Some(CUSTOM_SECTION) {
            let value = serde_json::from_slice(&module[s.data..s.end])
                .map_err(|e| format!("{CUSTOM_SECTION} is not JSON: {e}"))?;
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// The module without its metadata section: what evaluates.
pub fn strip(module: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = module.get(..8).ok_or("not a wasm module")?.to_vec();
    for s in sections(module)?
        .iter()
        .filter(|s| s.name.as_deref() != Some(CUSTOM_SECTION))
    {
        out.extend_from_slice(&module[s.start..s.end]);
    }
    Ok(out)
}

struct Section {
    start: usize,
    /// Where a custom section's data starts (after its name).
    data: usize,
    end: usize,
    name: Option<String>,
}

fn sections(module: &[u8]) -> Result<Vec<Section>, String> {
    if module.len() < 8 || &module[..4] != b"\0asm" {
        return Err("not a WebAssembly module".into());
    }
    let mut out = Vec::new();
    let mut at = 8;
    while at < module.len() {
        let start = at;
        let id = module[at];
        let (size, used) = read_leb128(&module[at + 1..]).ok_or("truncated section header")?;
        let body = at + 1 + used;
        let end = body
            .checked_add(size)
            .filter(|e| *e <= module.len())
            .ok_or("truncated section")?;
        let (name, data) = if id == 0 {
            let (len, used) = read_leb128(&module[body..end]).ok_or("bad custom section name")?;
            let name_end = (body + used)
                .checked_add(len)
                .filter(|e| *e <= end)
                .ok_or("bad custom section name")?;
            let name = String::from_utf8_lossy(&module[body + used..name_end]).into_owned();
            (Some(name), name_end)
        } else {
            (None, body)
        };
        out.push(Section {
            start,
            data,
            end,
            name,
        });
        at = end;
    }
    Ok(out)
}

fn leb128(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

fn read_leb128(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut n: usize = 0;
    for (i, b) in bytes.iter().enumerate().take(5) {
        n |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

/// Manifest annotations, as kwctl push writes them: the single-line metadata annotations, and
/// the source also as `org.opencontainers.image.source`.
pub fn manifest_annotations(metadata: &Value) -> Map<String, Value> {
    let mut out: Map<String, Value> = metadata["annotations"]
        .as_object()
        .map(|a| {
            a.iter()
                .filter(|(_, v)| v.as_str().is_some_and(|s| !s.contains('\n')))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    if let Some(source) = out.get(SOURCE).cloned() {
        out.insert("org.opencontainers.image.source".into(), source);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metadata() -> Value {
        read_yaml(include_str!("../../../metadata.yml")).expect("metadata.yml")
    }

    #[test]
    fn the_project_metadata_is_valid() {
        assert!(annotated(&metadata(), "v1", "usage").is_ok());
    }

    #[test]
    fn invalid_metadata_is_refused_with_what_to_fix() {
        let edit = |f: fn(&mut Value)| {
            let mut m = metadata();
            f(&mut m);
            annotated(&m, "v1", "usage").expect_err("refused")
        };
        type Edit = fn(&mut Value);
        let cases: [(Edit, &str); 8] = [
            (|m| m["contextAware"] = json!(false), "metadata: contextAware is the legacy field; declare contextAwareResources, the list of {apiVersion, kind} the policy reads ([] for none)"),
            (|m| m["contextAwareResources"] = json!([{"kind": "Namespace"}]), "metadata: contextAwareResources [{\"kind\":\"Namespace\"}] is not a list of {apiVersion, kind}"),
            (|m| { m["annotations"].as_object_mut().map(|a| a.remove("io.kubewarden.policy.author")); }, "metadata: annotation io.kubewarden.policy.author is missing or empty; add it to metadata.yml"),
            (|m| m["annotations"][TITLE] = json!("Restage_Gate"), "metadata: io.kubewarden.policy.title \"Restage_Gate\" is not an RFC 1123 name (lowercase letters, digits and '-', at most 63, starting and ending with a letter or digit)"),
            (|m| m["annotations"][VERSION] = json!("0.1"), "metadata: io.kubewarden.policy.version \"0.1\" is not a semantic version such as 1.2.3"),
            (|m| m["rules"] = json!([]), "metadata: rules must be a non-empty list"),
            (|m| m["rules"][0]["operations"] = json!(["PATCH"]), "metadata: rules[0].operations: \"PATCH\" is not one of CREATE, UPDATE, DELETE, CONNECT, *"),
            (|m| m["rules"][0]["resources"] = json!("statefulsets"), "metadata: rules[0].resources must be a non-empty list of strings"),
        ];
        for (f, want) in cases {
            assert_eq!(edit(f), want);
        }
    }

    #[test]
    fn semver_and_names() {
        for (v, ok) in [
            ("0.1.0", true),
            ("1.2.3-rc.1", true),
            ("1.2", false),
            ("01.2.3", false),
            ("v1.2.3", false),
        ] {
            assert_eq!(is_semver(v), ok, "{v}");
        }
        for (n, ok) in [
            ("restage-gate", true),
            ("-x", false),
            ("X", false),
            ("a".repeat(64).as_str(), false),
        ] {
            assert_eq!(is_rfc1123_name(n), ok, "{n}");
        }
    }

    #[test]
    fn embedding_replaces_the_section_and_strips_back() {
        let module = b"\0asm\x01\0\0\0\x01\x04\x01\x60\0\0".to_vec();
        let m = json!({"a": 1});
        let once = embed(&module, &m).expect("embed");
        assert_eq!(embedded(&once).expect("parse"), Some(m.clone()));
        assert_eq!(
            embed(&once, &m).expect("embed"),
            once,
            "annotating twice changes nothing"
        );
        assert_eq!(strip(&once).expect("strip"), module);
        assert_eq!(embedded(&module).expect("parse"), None);
    }

    #[test]
    fn manifest_annotations_are_single_line_and_carry_the_oci_source() {
        let m = annotated(&metadata(), "v1", "line one\nline two").expect("valid");
        let a = manifest_annotations(&m);
        assert!(!a.contains_key(USAGE), "multi-line usage left out");
        assert_eq!(
            a["org.opencontainers.image.source"],
            m["annotations"][SOURCE]
        );
    }
}
