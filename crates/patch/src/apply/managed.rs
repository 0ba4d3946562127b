//! `metadata.managedFields`: who owns which fields, read and written as
//! apimachinery's `managedfields/internal` package does (`managedfields.go`,
//! `capmanagers.go`, `stripmeta.go`, `fieldmanager.go`).
//!
//! Inside, the entries are keyed by their manager identifier, the JSON of
//! the entry without fields and time (and without `apiVersion` for
//! appliers), so one applier has one entry whatever version it applied in.

use std::collections::BTreeMap;

use listwatch_gocompat::json::{Escaping, quote};
use listwatch_gocompat::time::{days_from_civil, format_rfc3339};
use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, PathElement};
use super::fields_v1;

/// Kube's cap on `Update` entries; older ones fold into [`ANCIENT_CHANGES`].
pub const MAX_UPDATE_MANAGERS: usize = 10;

/// The manager that the oldest `Update` entries beyond the cap fold into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// The kind of write that made an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Create, update, or a non-apply patch.
    Update,
}

impl Operation {
    /// The wire name, `Apply` or `Update`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `metadata.managedFields` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagedFieldsEntry {
    /// The field manager's name.
    pub manager: String,
    /// Apply or Update.
    pub operation: Operation,
    /// The version the fields are named in, e.g. `apps/v1`.
    pub api_version: String,
    /// When the entry last changed (RFC 3339, seconds, UTC); kube leaves it
    /// out on an entry made by an apply that changed nothing.
    pub time: Option<String>,
    /// The owned fields (written as `fieldsV1`).
    pub fields: FieldSet,
    /// `status` or `scale` for writes to a subresource, else empty.
    pub subresource: String,
}

impl ManagedFieldsEntry {
    /// The entry as kube writes it, keys in kube's order: `manager`,
    /// `operation`, `apiVersion`, `time`, `fieldsType`, `fieldsV1`,
    /// `subresource` (empty ones left out).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        if !self.manager.is_empty() {
            out.insert("manager".into(), Value::from(self.manager.as_str()));
        }
        out.insert("operation".into(), Value::from(self.operation.as_str()));
        if !self.api_version.is_empty() {
            out.insert("apiVersion".into(), Value::from(self.api_version.as_str()));
        }
        if let Some(time) = &self.time {
            out.insert("time".into(), Value::from(time.as_str()));
        }
        out.insert("fieldsType".into(), Value::from("FieldsV1"));
        out.insert("fieldsV1".into(), fields_v1::encode(&self.fields));
        if !self.subresource.is_empty() {
            out.insert("subresource".into(), Value::from(self.subresource.as_str()));
        }
        Value::Object(out)
    }

    /// The manager identifier of this entry.
    pub fn identifier(&self) -> String {
        identifier(&self.manager, self.operation, &self.api_version, &self.subresource)
    }
}

/// kube's `BuildManagerIdentifier`: the entry's JSON without fields and
/// time, and without `apiVersion` for `Apply`, e.g.
/// `{"manager":"m1","operation":"Apply"}`.
pub fn identifier(manager: &str, operation: Operation, api_version: &str, subresource: &str) -> String {
    // kube marshals the entry with encoding/json, which since Go 1.22 writes `\b` and `\f`
    // short; identifiers here have always used json-iterator's `\u0008` and `\u000c`. Only
    // this crate reads them back, so neither is seen outside.
    let string = |s: &str| quote(s, Escaping::JsonIterator);
    let mut out = String::from("{");
    let mut parts = Vec::new();
    if !manager.is_empty() {
        parts.push(format!("\"manager\":{}", string(manager)));
    }
    parts.push(format!("\"operation\":\"{}\"", operation.as_str()));
    if operation == Operation::Update && !api_version.is_empty() {
        parts.push(format!("\"apiVersion\":{}", string(api_version)));
    }
    if !subresource.is_empty() {
        parts.push(format!("\"subresource\":{}", string(subresource)));
    }
    out.push_str(&parts.join(","));
    out.push('}');
    out
}

/// The parts of an identifier.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Identity {
    pub(crate) manager: String,
    pub(crate) operation: String,
    pub(crate) api_version: String,
    pub(crate) subresource: String,
}

pub(crate) fn parse_identifier(identifier: &str) -> Option<Identity> {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(identifier) else {
        return None;
    };
    let text = |key: &str| map.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    Some(Identity {
        manager: text("manager"),
        operation: text("operation"),
        api_version: text("apiVersion"),
        subresource: text("subresource"),
    })
}

/// One manager's fields, the version they are named in, and whether they
/// were applied (SMD's `VersionedSet`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VersionedSet {
    pub(crate) set: FieldSet,
    pub(crate) api_version: String,
    pub(crate) applied: bool,
}

/// The decoded managedFields: sets and times by manager identifier
/// (apimachinery's `Managed`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Managed {
    pub(crate) fields: BTreeMap<String, VersionedSet>,
    /// `None` for an entry without a time.
    pub(crate) times: BTreeMap<String, Option<String>>,
}

/// Reads `metadata.managedFields` of `object` (absent or `null` is empty),
/// failing with kube's text on an entry it would refuse.
pub(crate) fn decode(object: &Value) -> Result<Managed, String> {
    match object.pointer("/metadata/managedFields") {
        None | Some(Value::Null) => Ok(Managed::default()),
        Some(Value::Array(entries)) => decode_entries(entries),
        Some(_) => Err("managedFields must be a list".to_owned()),
    }
}

fn decode_entries(entries: &[Value]) -> Result<Managed, String> {
    let mut managed = Managed::default();
    for (i, entry) in entries.iter().enumerate() {
        let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or_default();
        let operation = match text("operation") {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".to_owned()),
        };
        if text("apiVersion").is_empty() {
            return Err("apiVersion must not be empty".to_owned());
        }
        match text("fieldsType") {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                let other = quote(other, Escaping::JsonIterator);
                return Err(format!("invalid fieldsType {other} in managed fields entry {i}"));
            }
        }
        let set = fields_v1::decode(entry.get("fieldsV1").unwrap_or(&Value::Null))
            .map_err(|e| format!("error decoding versioned set from {entry}: error decoding set: {e}"))?;
        let id = identifier(text("manager"), operation, text("apiVersion"), text("subresource"));
        managed.fields.insert(
            id.clone(),
            VersionedSet { set, api_version: text("apiVersion").to_owned(), applied: operation == Operation::Apply },
        );
        let time = entry.get("time").and_then(Value::as_str).and_then(parse_rfc3339).map(format_rfc3339);
        managed.times.insert(id, time);
    }
    Ok(managed)
}

/// Reads the entries of `object` as [`ManagedFieldsEntry`]s, sorted as kube
/// sorts them.
pub fn read_entries(object: &Value) -> Result<Vec<ManagedFieldsEntry>, String> {
    decode(object).map(|managed| entries(&managed))
}

/// The entries of `managed`, sorted as kube sorts them: `Apply` before
/// `Update`, then by time (whole seconds, no time first), manager, apiVersion,
/// subresource.
pub(crate) fn entries(managed: &Managed) -> Vec<ManagedFieldsEntry> {
    let mut out: Vec<ManagedFieldsEntry> = managed
        .fields
        .iter()
        .map(|(id, versioned)| {
            let identity = parse_identifier(id).unwrap_or_default();
            ManagedFieldsEntry {
                manager: identity.manager,
                operation: if versioned.applied { Operation::Apply } else { Operation::Update },
                api_version: versioned.api_version.clone(),
                time: managed.times.get(id).cloned().flatten(),
                fields: versioned.set.clone(),
                subresource: identity.subresource,
            }
        })
        .collect();
    out.sort_by(|p, q| {
        let seconds = |e: &ManagedFieldsEntry| e.time.as_deref().and_then(parse_rfc3339).unwrap_or(0);
        p.operation
            .cmp(&q.operation)
            .then_with(|| seconds(p).cmp(&seconds(q)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    out
}

/// Writes `managed` into `object`'s `metadata.managedFields`, removing the
/// key when there is no entry (kube's `EncodeObjectManagedFields`).
pub(crate) fn encode_into(object: &mut Value, managed: &Managed) {
    let list = entries(managed);
    set_managed_fields(
        object,
        (!list.is_empty()).then(|| Value::Array(list.iter().map(ManagedFieldsEntry::to_json).collect())),
    );
}

/// Sets or removes `metadata.managedFields`, keeping its place if present.
pub(crate) fn set_managed_fields(object: &mut Value, entries: Option<Value>) {
    let Value::Object(root) = object else { return };
    match entries {
        Some(entries) => {
            let metadata = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(metadata) = metadata {
                metadata.insert("managedFields".into(), entries);
            }
        }
        None => {
            if let Some(Value::Object(metadata)) = root.get_mut("metadata") {
                metadata.shift_remove("managedFields");
            }
        }
    }
}

/// The fields no manager owns (kube's `stripmeta.go`).
pub(crate) fn stripped_fields() -> FieldSet {
    let f = PathElement::field;
    let mut set = FieldSet::new();
    for top in ["apiVersion", "kind", "metadata"] {
        set.insert(&[f(top)]);
    }
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[f("metadata"), f(name)]);
    }
    set
}

/// Strips the unowned fields from `manager`'s set, dropping it if empty.
pub(crate) fn strip(managed: &mut Managed, manager: &str) {
    if let Some(versioned) = managed.fields.get_mut(manager) {
        static STRIPPED: std::sync::OnceLock<FieldSet> = std::sync::OnceLock::new();
        versioned.set.remove(STRIPPED.get_or_init(stripped_fields));
        if versioned.set.is_empty() {
            managed.fields.remove(manager);
        }
    }
}

/// Folds the oldest `Update` entries into one [`ANCIENT_CHANGES`] entry per
/// version until at most `max` remain (kube's `capUpdateManagers`, step for
/// step: the first entry of a version moves into the bucket only once a
/// second one joins it).
pub(crate) fn cap_update_managers(managed: &mut Managed, max: usize) {
    let mut updaters: Vec<String> =
        managed.fields.iter().filter(|(_, v)| !v.applied).map(|(id, _)| id.clone()).collect();
    if updaters.len() <= max {
        return;
    }
    let seconds = |id: &str| managed.times.get(id).cloned().flatten().as_deref().and_then(parse_rfc3339).unwrap_or(0);
    updaters.sort_by(|a, b| seconds(a).cmp(&seconds(b)).then_with(|| a.cmp(b)));
    let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
    let mut length = updaters.len();
    for manager in updaters {
        if length <= max {
            break;
        }
        let Some(versioned) = managed.fields.get(&manager).cloned() else { continue };
        let time = managed.times.get(&manager).cloned().flatten();
        let version = versioned.api_version.clone();
        let bucket = identifier(ANCIENT_CHANGES, Operation::Update, &version, "");
        if let Some(first) = first_of_version.get(&version) {
            if !managed.fields.contains_key(&bucket) {
                if let Some(first_set) = managed.fields.remove(first) {
                    managed.fields.insert(bucket.clone(), first_set);
                }
            }
            let merged = managed.fields.get(&bucket).map(|b| b.set.union(&versioned.set)).unwrap_or_default();
            managed.fields.insert(bucket.clone(), VersionedSet { set: merged, api_version: version, applied: false });
            managed.fields.remove(&manager);
            length -= 1;
            managed.times.insert(bucket, time);
        } else {
            first_of_version.insert(version, manager);
        }
    }
    managed.times.retain(|id, _| managed.fields.contains_key(id));
}

/// Seconds since the epoch of an RFC 3339 time (`2024-05-01T10:00:00Z`,
/// fractions and offsets allowed).
pub(crate) fn parse_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't') {
        return None;
    }
    let number = |range: std::ops::Range<usize>| text.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        rest = fraction.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (hours * 3600 + minutes * 60)
        }
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identifiers_are_kube_json() {
        assert_eq!(identifier("m1", Operation::Apply, "apps/v1", ""), r#"{"manager":"m1","operation":"Apply"}"#);
        assert_eq!(
            identifier("kubectl-edit", Operation::Update, "apps/v1", "status"),
            r#"{"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1","subresource":"status"}"#
        );
    }

    #[test]
    fn times_round_trip() {
        let t = parse_rfc3339("2024-02-29T23:59:59Z").unwrap();
        assert_eq!(t, 1_709_251_199);
        assert_eq!(format_rfc3339(t), "2024-02-29T23:59:59Z");
        assert_eq!(parse_rfc3339("2024-03-01T01:59:59.5+02:00"), Some(t));
        assert_eq!(parse_rfc3339("yesterday"), None);
    }

    #[test]
    fn entries_sort_and_encode_as_kube() {
        let object = json!({"metadata": {"managedFields": [
            {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:02Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:b": {}}}},
            {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:02Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
            {"manager": "z", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-01T00:00:09Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:z": {}}}, "subresource": "status"}
        ]}});
        let managed = decode(&object).unwrap();
        let mut out = json!({"metadata": {}});
        encode_into(&mut out, &managed);
        let names: Vec<&str> = out["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["z", "a", "b"]);
        assert_eq!(
            serde_json::to_string(&out["metadata"]["managedFields"][0]).unwrap(),
            r#"{"manager":"z","operation":"Apply","apiVersion":"v1","time":"2024-01-01T00:00:09Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:z":{}}},"subresource":"status"}"#
        );
    }

    #[test]
    fn decoding_refuses_what_kube_refuses() {
        let entry = |e: Value| decode(&json!({"metadata": {"managedFields": [e]}})).unwrap_err();
        assert_eq!(
            entry(json!({"manager": "m", "operation": "Patch", "apiVersion": "v1"})),
            "operation must be `Apply` or `Update`"
        );
        assert_eq!(entry(json!({"manager": "m", "operation": "Apply"})), "apiVersion must not be empty");
        assert_eq!(
            entry(json!({"manager": "m", "operation": "Apply", "apiVersion": "v1"})),
            "missing fieldsType in managed fields entry 0"
        );
        assert_eq!(
            entry(json!({"manager": "m", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"})),
            r#"invalid fieldsType "FieldsV2" in managed fields entry 0"#
        );
    }

    #[test]
    fn caps_update_managers_into_ancient_changes() {
        let mut managed = Managed::default();
        for i in 0..12 {
            let id = identifier(&format!("m{i:02}"), Operation::Update, "v1", "");
            let mut set = FieldSet::new();
            set.insert(&[PathElement::field("data"), PathElement::field(format!("k{i}"))]);
            managed.fields.insert(id.clone(), VersionedSet { set, api_version: "v1".into(), applied: false });
            managed.times.insert(id, Some(format_rfc3339(1_700_000_000 + i)));
        }
        cap_update_managers(&mut managed, MAX_UPDATE_MANAGERS);
        let list = entries(&managed);
        assert_eq!(list.len(), 10);
        let bucket = list.iter().find(|e| e.manager == ANCIENT_CHANGES).unwrap();
        // m00, m01 and m02 folded; the bucket takes the newest folded time.
        assert_eq!(bucket.fields.len(), 3);
        assert_eq!(bucket.time.as_deref(), Some("2023-11-14T22:13:22Z"));
        assert!(!list.iter().any(|e| ["m00", "m01", "m02"].contains(&e.manager.as_str())));
    }
}
