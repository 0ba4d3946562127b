//! One served version of a CRD, compiled for serving its custom resources: the parsed schema,
//! the printer columns, the subresources, and what kube's custom resource handler does with
//! them to each object (`pkg/apiserver/customresource_handler.go`, `pkg/registry/customresource`):
//!
//! * on every write, the decoded body is pruned (the removed paths are what
//!   `fieldValidation=Strict|Warn` reports) and defaulted ([`ServedVersion::coerce`]);
//! * on every read from storage, the same pruning and defaulting, quietly
//!   ([`listwatch_meta::registry::DynamicKind::on_read`]), so a default added to the CRD later
//!   shows before any write;
//! * validation: the type meta against the URL, then the schema with its list-type and
//!   embedded-resource checks and its CEL rules ([`crate::schema::cel`]), then the scale
//!   subresource's replicas ([`ServedVersion::validate`]); a write to `/status` validates only
//!   `status`, without the CEL rules ([`ServedVersion::validate_status`]);
//! * Tables: the version's `additionalPrinterColumns` ([`crate::table::Columns`]).

use std::time::SystemTime;

use listwatch_meta::registry::DynamicKind;
use listwatch_meta::validation::FieldError;
use serde_json::{Map, Value};

use crate::crd::{CustomResourceDefinition, CustomResourceSubresourceScale};
use crate::fields::{scale_of, validate_type_meta};
use crate::schema::Schema;
use crate::table::Columns;

/// The most replicas a scale subresource takes (Go's `int32`).
const MAX_REPLICAS: i64 = i32::MAX as i64;

/// One served version of a CRD, ready to serve.
#[derive(Debug)]
pub struct ServedVersion {
    /// `<plural>.<group>`: the CRD's name.
    pub crd_name: String,
    /// The API group.
    pub group: String,
    /// This version's name.
    pub version: String,
    /// The accepted kind.
    pub kind: String,
    /// The accepted plural.
    pub plural: String,
    /// The root schema (v1 CRDs always have one; `None` only for one that does not parse).
    pub schema: Option<Schema>,
    /// The same, as written in the CRD (`openAPIV3Schema`), for whoever reads it as JSON
    /// (server-side apply's merge rules).
    pub open_api_schema: Option<Value>,
    /// The printer columns.
    pub columns: Columns,
    /// Whether `/status` is served.
    pub status_subresource: bool,
    /// The scale subresource's paths, when `/scale` is served.
    pub scale: Option<CustomResourceSubresourceScale>,
    /// The `Warning` every request to this version gets, when it is deprecated.
    pub deprecation_warning: Option<String>,
}

impl ServedVersion {
    /// Compiles `version` of `crd` (its accepted names). `None` when the CRD does not serve it.
    pub fn new(crd: &CustomResourceDefinition, version: &str) -> Option<ServedVersion> {
        let v = crd.version(version).filter(|v| v.served)?;
        let names = &crd.status.accepted_names;
        let schema = v.open_api_schema().and_then(|s| Schema::parse(s).ok());
        // Column paths were checked when the CRD was written; a bad one shows no columns.
        let columns = Columns::of(v).unwrap_or_else(|_| {
            let mut plain = v.clone();
            plain.additional_printer_columns.clear();
            Columns::of(&plain).expect("the default columns compile")
        });
        let deprecation_warning = v.deprecated.then(|| {
            v.deprecation_warning.clone().unwrap_or_else(|| default_deprecation_warning(crd, version, &names.kind))
        });
        Some(ServedVersion {
            crd_name: crd.name().to_owned(),
            group: crd.spec.group.clone(),
            version: version.to_owned(),
            kind: names.kind.clone(),
            plural: names.plural.clone(),
            schema,
            open_api_schema: v.open_api_schema().cloned(),
            columns,
            status_subresource: v.has_status_subresource(),
            scale: v.scale().cloned(),
            deprecation_warning,
        })
    }

    /// `<group>/<version>`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group, self.version)
    }

    /// Prunes `object` against the schema and applies its defaults, as kube's decoder does
    /// with a written body; returns the pruned paths (`spec.foo`), sorted.
    pub fn coerce(&self, object: &mut Value) -> Vec<String> {
        let Some(schema) = &self.schema else { return Vec::new() };
        let unknown = schema.prune(object);
        schema.apply_defaults(object);
        unknown
    }

    /// kube's `customResourceStrategy.Validate` past ObjectMeta (which the apiserver checks for
    /// every kind): the type meta first (alone when it fails), then the schema with its
    /// list-type and embedded-resource rules, then the scale replicas.
    /// `old` is the stored object an update replaces (`None` on create), for CEL's `oldSelf`.
    pub fn validate(&self, object: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let type_meta = validate_type_meta(object, &self.api_version(), &self.kind);
        if !type_meta.is_empty() {
            return type_meta;
        }
        let mut errs = self.schema.as_ref().map(|s| s.validate_update(object, old)).unwrap_or_default();
        errs.extend(self.validate_scale(object, true));
        errs
    }

    /// kube's status strategy: the type meta, `status` against `properties.status`, and the
    /// scale's status replicas.
    pub fn validate_status(&self, object: &Value) -> Vec<FieldError> {
        let type_meta = validate_type_meta(object, &self.api_version(), &self.kind);
        if !type_meta.is_empty() {
            return type_meta;
        }
        let status = object.get("status").cloned().unwrap_or(Value::Null);
        let mut errs = match (&self.schema, status.is_null()) {
            (Some(schema), false) => schema.validate_status(&status),
            _ => Vec::new(),
        };
        errs.extend(self.validate_scale(object, false));
        errs
    }

    /// kube's `ValidateScaleSpec` / `ValidateScaleStatus`: replicas at the scale paths, when
    /// present, are integers in 0..=2^31-1.
    fn validate_scale(&self, object: &Value, spec: bool) -> Vec<FieldError> {
        let Some(scale) = &self.scale else { return Vec::new() };
        let path = if spec { &scale.spec_replicas_path } else { &scale.status_replicas_path };
        let Ok(json_path) = crate::jsonpath::JsonPath::parse(path) else { return Vec::new() };
        let field = path.trim_start_matches('.');
        match json_path.first(object) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Number(n)) => match n.as_i64() {
                Some(r) if (0..=MAX_REPLICAS).contains(&r) => Vec::new(),
                Some(r) if r < 0 => {
                    vec![FieldError::invalid(field, &r.to_string(), "should be a non-negative integer")]
                }
                _ => vec![FieldError::invalid(field, &n.to_string(), "should be less than or equal to 2147483647")],
            },
            Some(other) => vec![FieldError::invalid(field, &other.to_string(), "should be an integer")],
        }
    }

    /// What `/scale` reports for `object`.
    pub fn scale_view(&self, object: &Value) -> Option<crate::fields::ScaleView> {
        self.scale.as_ref().map(|s| scale_of(object, s))
    }
}

/// kube's `defaultDeprecationWarning`: the version is deprecated; use the newest served
/// version that is not.
fn default_deprecation_warning(crd: &CustomResourceDefinition, deprecated: &str, kind: &str) -> String {
    let group = &crd.spec.group;
    let mut msg = format!("{group}/{deprecated} {kind} is deprecated");
    let mut candidates: Vec<&str> =
        crd.spec.versions.iter().filter(|v| v.served && !v.deprecated).map(|v| v.name.as_str()).collect();
    candidates.sort_by(|a, b| crate::version_order::compare(b, a));
    if let Some(newest) = candidates.first() {
        msg.push_str(&format!("; use {group}/{newest} {kind}"));
    }
    msg
}

impl DynamicKind for ServedVersion {
    fn on_read(&self, object: &mut Map<String, Value>) {
        let mut value = Value::Object(std::mem::take(object));
        self.coerce(&mut value);
        if let Value::Object(map) = value {
            *object = map;
        }
    }

    fn column_definitions(&self) -> Value {
        self.columns.definitions()
    }

    fn cells(&self, object: &Value, now: SystemTime) -> Vec<Value> {
        self.columns.cells(object, now)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn served() -> ServedVersion {
        let raw: Value = serde_json::from_str(include_str!("../tests/fixtures/crontab-crd.json")).unwrap();
        let mut crd = CustomResourceDefinition::from_value(&raw).unwrap();
        crd.status.accepted_names = crd.spec.names.clone();
        ServedVersion::new(&crd, "v1").unwrap()
    }

    #[test]
    fn writes_are_pruned_and_defaulted_and_reads_too() {
        let v = served();
        let mut cr = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": "c"}, "spec": {"cronSpec": "* * * * */5", "image": "x", "foo": 1}});
        assert_eq!(v.coerce(&mut cr), ["spec.foo"]);
        assert!(cr["spec"].get("foo").is_none());
        let mut stored = json!({"metadata": {"name": "c"}, "spec": {"bar": true}}).as_object().unwrap().clone();
        v.on_read(&mut stored);
        assert!(stored["spec"].get("bar").is_none(), "{stored:?}");
    }

    #[test]
    fn type_meta_comes_first() {
        let v = served();
        let errs = v
            .validate(&json!({"apiVersion": "stable.example.com/v1", "kind": "Other", "spec": {"replicas": 99}}), None);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "kind");
    }
}
