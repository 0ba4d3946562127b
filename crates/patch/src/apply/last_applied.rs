//! The bridge from kubectl's client-side apply to server-side apply
//! (apimachinery's `lastappliedmanager.go` and `lastappliedupdater.go`).
//!
//! Client-side `kubectl apply` keeps its configuration in the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation and writes
//! as the `Update` manager `kubectl-client-side-apply`. When the manager
//! `kubectl` then applies server-side, conflicts on fields that are in the
//! annotation and unchanged since are forced, and after a successful apply
//! the annotation is rewritten to the new configuration, so that a later
//! client-side apply still sees what was applied last.

use listwatch_gocompat::json::{Escaping, marshal};
use serde_json::{Map, Value};

use super::fieldpath::FieldSet;
use super::schema::ApplySchema;
use super::typed::{compare, to_field_set, validate};

/// The annotation client-side `kubectl apply` keeps its configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// kube's limit on the total size of an object's annotations (keys plus
/// values); a rewritten annotation that would exceed it is dropped.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

fn annotation(object: &Value) -> Option<&str> {
    object.pointer("/metadata/annotations")?.get(LAST_APPLIED_ANNOTATION)?.as_str()
}

/// Whether `object` carries a non-empty last-applied annotation.
pub(crate) fn has_last_applied(object: &Value) -> bool {
    annotation(object).is_some_and(|text| !text.is_empty())
}

/// The annotation's value for an apply configuration: the configuration
/// without the annotation, as Go's JSON encoder writes it (keys sorted, a
/// final newline).
pub(crate) fn build_last_applied(config: &Value) -> String {
    let mut config = config.clone();
    if let Some(Value::Object(annotations)) = config.pointer_mut("/metadata/annotations") {
        annotations.shift_remove(LAST_APPLIED_ANNOTATION);
    }
    // kube encodes it with encoding/json (`UnstructuredJSONScheme`), whose Go 1.22 and later
    // write backspace and form feed as `\b` and `\f`; this has always written json-iterator's
    // `\u0008` and `\u000c`, kept as it was.
    let mut text = marshal(&config, Escaping::JsonIterator);
    text.push('\n');
    text
}

/// Sets the annotation, dropping it instead when the annotations would
/// exceed kube's size limit.
pub(crate) fn set_last_applied(object: &mut Value, value: String) {
    let Some(Value::Object(metadata)) = object.get_mut("metadata") else { return };
    let annotations = metadata.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
    if !annotations.is_object() {
        *annotations = Value::Object(Map::new());
    }
    let Value::Object(annotations) = annotations else { return };
    annotations.insert(LAST_APPLIED_ANNOTATION.to_owned(), Value::String(value));
    let size: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().map_or(0, str::len)).sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.shift_remove(LAST_APPLIED_ANNOTATION);
    }
}

/// The fields of the live object's last-applied configuration whose live
/// values still match it: conflicts there are forced for `kubectl`. `None`
/// when there is no usable annotation (absent, not an object of the
/// endpoint's version with a kind, or not fitting the schema).
pub(crate) fn allowed_conflicts(live: &Value, api_version: &str, schema: &dyn ApplySchema) -> Option<FieldSet> {
    let text = annotation(live).filter(|text| !text.is_empty())?;
    let last_applied: Value = serde_json::from_str(text).ok()?;
    let field = |name: &str| last_applied.get(name).and_then(Value::as_str).unwrap_or_default();
    if !last_applied.is_object() || field("kind").is_empty() || field("apiVersion") != api_version {
        return None;
    }
    if !validate(live, schema, false).is_empty() || !validate(&last_applied, schema, false).is_empty() {
        return None;
    }
    let comparison = compare(&last_applied, live, schema);
    Some(
        to_field_set(&last_applied, schema)
            .difference(&comparison.modified)
            .difference(&comparison.added)
            .difference(&comparison.removed),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builds_the_annotation_as_kube() {
        let config = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "c", "annotations": {LAST_APPLIED_ANNOTATION: "old", "a": "<b>"}}, "data": {"k": "v"}});
        assert_eq!(
            build_last_applied(&config),
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"v\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{\"a\":\"\\u003cb\\u003e\"},\"name\":\"c\"}}\n"
        );
        let mut object = json!({"metadata": {"annotations": {LAST_APPLIED_ANNOTATION: "old"}}});
        set_last_applied(&mut object, "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT));
        assert_eq!(object, json!({"metadata": {"annotations": {}}}));
    }
}
