//! Paths into custom resources that the server reads besides the schema:
//!
//! * field selectors: `metadata.name`, `metadata.namespace` for namespaced CRDs, and each
//!   `selectableFields[].jsonPath` without its leading dot; anything else is a 400
//!   `field label not supported: <label>` ([`FieldSelectors`]);
//! * the scale subresource: `spec.replicas` and `status.replicas` (0 when missing) and the
//!   label selector string, at the CRD's paths ([`scale_of`]);
//! * the type meta check of a written object (`kind: Invalid value: "X": must be CronTab`,
//!   [`validate_type_meta`]).

use listwatch_meta::validation::FieldError;
use serde_json::Value;

use crate::crd::{CustomResourceDefinition, CustomResourceSubresourceScale};
use crate::jsonpath::JsonPath;

/// The field selector labels of one version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldSelectors {
    labels: Vec<String>,
}

impl FieldSelectors {
    /// The labels `version` of `crd` supports.
    pub fn of(crd: &CustomResourceDefinition, version: &str) -> FieldSelectors {
        let mut labels = vec!["metadata.name".to_string()];
        if crd.is_namespaced() {
            labels.push("metadata.namespace".into());
        }
        if let Some(v) = crd.version(version) {
            labels.extend(v.selectable_fields.iter().map(|f| f.json_path.trim_start_matches('.').to_owned()));
        }
        FieldSelectors { labels }
    }

    /// Every supported label.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// `Err("field label not supported: <label>")` (kube's 400 message) for an unknown label.
    pub fn check(&self, label: &str) -> Result<(), String> {
        if self.labels.iter().any(|l| l == label) { Ok(()) } else { Err(format!("field label not supported: {label}")) }
    }

    /// The value a selector compares for `label` in `object`: strings as is, booleans and
    /// integers in decimal, empty when missing.
    pub fn value(&self, object: &Value, label: &str) -> String {
        let found = label.split('.').try_fold(object, |v, k| v.get(k));
        match found {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Number(n)) => n.to_string(),
            _ => String::new(),
        }
    }
}

/// What `/scale` reports for an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScaleView {
    /// At `specReplicasPath`, 0 when missing.
    pub spec_replicas: i64,
    /// At `statusReplicasPath`, 0 when missing.
    pub status_replicas: i64,
    /// At `labelSelectorPath`, empty when missing.
    pub selector: String,
}

/// Reads the scale subresource's view of `object`.
pub fn scale_of(object: &Value, scale: &CustomResourceSubresourceScale) -> ScaleView {
    let int_at =
        |path: &str| JsonPath::parse(path).ok().and_then(|p| p.first(object).and_then(Value::as_i64)).unwrap_or(0);
    let selector = scale
        .label_selector_path
        .as_deref()
        .and_then(|p| JsonPath::parse(p).ok())
        .and_then(|p| p.first(object).and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    ScaleView {
        spec_replicas: int_at(&scale.spec_replicas_path),
        status_replicas: int_at(&scale.status_replicas_path),
        selector,
    }
}

/// kube's `ValidateTypeMeta` of a custom resource: `kind` and `apiVersion` must be those of
/// the URL (`kind: Invalid value: "X": must be CronTab`).
pub fn validate_type_meta(object: &Value, api_version: &str, kind: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let got_kind = object.get("kind").and_then(Value::as_str).unwrap_or("");
    if got_kind != kind {
        errs.push(FieldError::invalid("kind", got_kind, &format!("must be {kind}")));
    }
    let got_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if got_version != api_version {
        errs.push(FieldError::invalid("apiVersion", got_version, &format!("must be {api_version}")));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fixture() -> CustomResourceDefinition {
        let raw: Value = serde_json::from_str(include_str!("../tests/fixtures/crontab-crd.json")).unwrap();
        CustomResourceDefinition::from_value(&raw).unwrap()
    }

    #[test]
    fn selectable_fields_and_scale() {
        let crd = fixture();
        let selectors = FieldSelectors::of(&crd, "v1");
        assert_eq!(selectors.labels(), ["metadata.name", "metadata.namespace", "spec.mode"]);
        assert_eq!(selectors.check("spec.foo"), Err("field label not supported: spec.foo".into()));
        let cr =
            json!({"metadata": {"name": "c"}, "spec": {"mode": "b", "replicas": 3}, "status": {"selector": "app=x"}});
        assert_eq!(selectors.value(&cr, "spec.mode"), "b");
        let view = scale_of(&cr, crd.spec.versions[0].scale().unwrap());
        assert_eq!(view, ScaleView { spec_replicas: 3, status_replicas: 0, selector: "app=x".into() });
        let errs = validate_type_meta(
            &json!({"apiVersion": "stable.example.com/v1", "kind": "X"}),
            "stable.example.com/v1",
            "CronTab",
        );
        assert_eq!(errs[0].to_string(), "kind: Invalid value: \"X\": must be CronTab");
    }
}
