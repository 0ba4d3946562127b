//! The `apiextensions.k8s.io/v1` CustomResourceDefinition, as typed serde structs.
//!
//! Why typed structs (and not a `Value` with typed views): kube-apiserver decodes a CRD into
//! Go structs, so fields it does not know vanish on write (with `fieldValidation=Strict` they
//! are a 400, with `Warn` a warning). Typed structs without a catch-all reproduce exactly
//! that, and [`unknown_fields`] names what was dropped, in kube's spelling, for Strict/Warn.
//! The fields are declared in Go's order and with Go's `omitempty` choices, so the JSON a
//! client reads back has kube's shape (`"conditions":null`, `"storedVersions":["v1"]`).
//!
//! Two parts stay free-form: `metadata` (ObjectMeta, which the apiserver handles for every
//! kind) and `openAPIV3Schema` (a JSON Schema document, read through [`crate::schema`]).
//! Unlike kube, unknown keywords inside a schema are kept rather than dropped.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The API group of CRDs.
pub const GROUP: &str = "apiextensions.k8s.io";
/// The kind.
pub const KIND: &str = "CustomResourceDefinition";
/// The resource (plural).
pub const RESOURCE: &str = "customresourcedefinitions";

/// `null` decodes as the type's default, as Go leaves a field at its zero value.
fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// A CustomResourceDefinition.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CustomResourceDefinition {
    /// `apiextensions.k8s.io/v1`.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `CustomResourceDefinition`.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// ObjectMeta, handled by the apiserver like every kind's.
    #[serde(default, deserialize_with = "null_as_default", skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
    /// What the user asks for.
    #[serde(default, deserialize_with = "null_as_default")]
    pub spec: CustomResourceDefinitionSpec,
    /// What the server reports.
    #[serde(default, deserialize_with = "null_as_default")]
    pub status: CustomResourceDefinitionStatus,
}

/// `spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomResourceDefinitionSpec {
    /// The API group of the custom resources (`stable.example.com`).
    #[serde(deserialize_with = "null_as_default")]
    pub group: String,
    /// Their names.
    #[serde(deserialize_with = "null_as_default")]
    pub names: CustomResourceDefinitionNames,
    /// `Namespaced` or `Cluster`.
    #[serde(deserialize_with = "null_as_default")]
    pub scope: String,
    /// The served versions.
    #[serde(deserialize_with = "null_as_default")]
    pub versions: Vec<CustomResourceDefinitionVersion>,
    /// How objects are converted between versions (defaulted to `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conversion: Option<CustomResourceConversion>,
    /// Must be false in v1.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub preserve_unknown_fields: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

/// `spec.names` and `status.acceptedNames`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomResourceDefinitionNames {
    /// The URL segment (`crontabs`).
    #[serde(deserialize_with = "null_as_default")]
    pub plural: String,
    /// The singular (`crontab`); defaulted to the lowercased kind.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub singular: String,
    /// Abbreviations kubectl accepts (`ct`).
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub short_names: Vec<String>,
    /// The kind (`CronTab`).
    #[serde(deserialize_with = "null_as_default")]
    pub kind: String,
    /// The list kind; defaulted to kind + `List`.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub list_kind: String,
    /// Groupings such as `all`.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
}

/// One entry of `spec.versions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomResourceDefinitionVersion {
    /// `v1`, `v1beta1`.
    #[serde(deserialize_with = "null_as_default")]
    pub name: String,
    /// Whether the version is served.
    #[serde(deserialize_with = "null_as_default")]
    pub served: bool,
    /// Whether objects are stored in this version (exactly one is).
    #[serde(deserialize_with = "null_as_default")]
    pub storage: bool,
    /// Whether requests to it get a deprecation warning.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "is_false")]
    pub deprecated: bool,
    /// The warning instead of the default one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deprecation_warning: Option<String>,
    /// The schema of objects in this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<CustomResourceValidation>,
    /// The status and scale subresources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresources: Option<CustomResourceSubresources>,
    /// Extra columns of `kubectl get`.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub additional_printer_columns: Vec<CustomResourceColumnDefinition>,
    /// Fields usable in field selectors.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "Vec::is_empty")]
    pub selectable_fields: Vec<SelectableField>,
}

/// `schema` of a version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CustomResourceValidation {
    /// The JSON schema (`JSONSchemaProps`).
    #[serde(rename = "openAPIV3Schema", skip_serializing_if = "Option::is_none")]
    pub open_api_v3_schema: Option<Value>,
}

/// `subresources` of a version.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CustomResourceSubresources {
    /// Present (as `{}`) when `/status` is served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<CustomResourceSubresourceStatus>,
    /// The paths `/scale` reads and writes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scale: Option<CustomResourceSubresourceScale>,
}

/// The (empty) status subresource marker.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomResourceSubresourceStatus {}

/// The scale subresource's paths.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomResourceSubresourceScale {
    /// `.spec.replicas`.
    #[serde(deserialize_with = "null_as_default")]
    pub spec_replicas_path: String,
    /// `.status.replicas`.
    #[serde(deserialize_with = "null_as_default")]
    pub status_replicas_path: String,
    /// `.status.selector`, a label selector in string form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector_path: Option<String>,
}

/// One `additionalPrinterColumns` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomResourceColumnDefinition {
    /// The header.
    #[serde(deserialize_with = "null_as_default")]
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    #[serde(rename = "type", deserialize_with = "null_as_default")]
    pub type_: String,
    /// An OpenAPI format hint.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub format: String,
    /// What the column shows.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// 0 = shown by default, more = only with `-o wide`.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// A simple JSONPath (`.spec.replicas`).
    #[serde(rename = "jsonPath", deserialize_with = "null_as_default")]
    pub json_path: String,
}

/// One `selectableFields` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct SelectableField {
    /// A simple JSONPath (`.spec.color`).
    #[serde(rename = "jsonPath", deserialize_with = "null_as_default")]
    pub json_path: String,
}

/// `spec.conversion`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CustomResourceConversion {
    /// `None` or `Webhook`.
    #[serde(deserialize_with = "null_as_default")]
    pub strategy: String,
    /// The webhook, for `Webhook`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub webhook: Option<WebhookConversion>,
}

/// `spec.conversion.webhook`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebhookConversion {
    /// Where the webhook is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_config: Option<WebhookClientConfig>,
    /// The ConversionReview versions the webhook understands.
    #[serde(deserialize_with = "null_as_default")]
    pub conversion_review_versions: Vec<String>,
}

/// A webhook's address.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebhookClientConfig {
    /// An URL.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Or a Service.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceReference>,
    /// The CA bundle, base64.
    #[serde(rename = "caBundle", skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

/// A Service a webhook runs behind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServiceReference {
    /// Its namespace.
    #[serde(deserialize_with = "null_as_default")]
    pub namespace: String,
    /// Its name.
    #[serde(deserialize_with = "null_as_default")]
    pub name: String,
    /// The URL path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The port (defaulted to 443).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
}

/// `status`. `conditions` and `storedVersions` have no omitempty in Go, so they print as
/// `null` when unset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomResourceDefinitionStatus {
    /// NamesAccepted, Established, Terminating.
    pub conditions: Option<Vec<CustomResourceDefinitionCondition>>,
    /// The names the server accepted.
    #[serde(deserialize_with = "null_as_default")]
    pub accepted_names: CustomResourceDefinitionNames,
    /// Every version objects were ever stored in.
    pub stored_versions: Option<Vec<String>>,
}

/// One status condition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CustomResourceDefinitionCondition {
    /// `NamesAccepted`, `Established`, `Terminating`.
    #[serde(rename = "type", deserialize_with = "null_as_default")]
    pub type_: String,
    /// `True`, `False`, `Unknown`.
    #[serde(deserialize_with = "null_as_default")]
    pub status: String,
    /// RFC 3339, seconds precision; `null` when unset (a zero `metav1.Time`).
    pub last_transition_time: Option<String>,
    /// One CamelCase word.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// For people.
    #[serde(deserialize_with = "null_as_default", skip_serializing_if = "String::is_empty")]
    pub message: String,
}

/// Why a body is not a CRD: kube's decoder would answer 400.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DecodeError {}

impl CustomResourceDefinition {
    /// Decodes a CRD from its JSON (fields the type does not know are dropped).
    pub fn from_value(value: &Value) -> Result<CustomResourceDefinition, DecodeError> {
        CustomResourceDefinition::deserialize(value).map_err(|e| DecodeError(e.to_string()))
    }

    /// The CRD as JSON, as kube serializes it.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a CRD always serializes")
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.metadata.get("name").and_then(Value::as_str).unwrap_or("")
    }

    /// `metadata.generation`, 0 when unset.
    pub fn generation(&self) -> i64 {
        self.metadata.get("generation").and_then(Value::as_i64).unwrap_or(0)
    }

    /// Sets `metadata.generation`.
    pub fn set_generation(&mut self, generation: i64) {
        self.metadata.insert("generation".into(), Value::from(generation));
    }

    /// `metadata.annotations[key]`.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata.get("annotations")?.get(key)?.as_str()
    }

    /// The version objects are stored in.
    pub fn storage_version(&self) -> Option<&CustomResourceDefinitionVersion> {
        self.spec.versions.iter().find(|v| v.storage)
    }

    /// The version named `name`.
    pub fn version(&self, name: &str) -> Option<&CustomResourceDefinitionVersion> {
        self.spec.versions.iter().find(|v| v.name == name)
    }

    /// Whether objects are namespaced.
    pub fn is_namespaced(&self) -> bool {
        self.spec.scope == "Namespaced"
    }

    /// The condition of type `type_`.
    pub fn condition(&self, type_: &str) -> Option<&CustomResourceDefinitionCondition> {
        self.status.conditions.as_ref()?.iter().find(|c| c.type_ == type_)
    }

    /// Whether the condition of type `type_` is `True`.
    pub fn is_condition_true(&self, type_: &str) -> bool {
        self.condition(type_).is_some_and(|c| c.status == "True")
    }

    /// `<group>/<version>` of a version.
    pub fn api_version_of(&self, version: &str) -> String {
        format!("{}/{version}", self.spec.group)
    }
}

impl CustomResourceDefinitionVersion {
    /// The root schema, when the version has one.
    pub fn open_api_schema(&self) -> Option<&Value> {
        self.schema.as_ref()?.open_api_v3_schema.as_ref()
    }

    /// Whether `/status` is served.
    pub fn has_status_subresource(&self) -> bool {
        self.subresources.as_ref().is_some_and(|s| s.status.is_some())
    }

    /// The scale subresource, when served.
    pub fn scale(&self) -> Option<&CustomResourceSubresourceScale> {
        self.subresources.as_ref()?.scale.as_ref()
    }
}

/// Fields of `raw` that the CRD type does not know, as kube's strict decoding names them
/// (`unknown field "spec.foo"` takes `spec.foo`; list items as `spec.versions[0].foo`), in
/// document order. `metadata` and schemas are not checked (both are free-form here).
pub fn unknown_fields(raw: &Value) -> Vec<String> {
    let Ok(crd) = CustomResourceDefinition::from_value(raw) else { return Vec::new() };
    let known = crd.to_value();
    let mut out = Vec::new();
    diff_fields(raw, &known, "", &mut out);
    out
}

fn diff_fields(raw: &Value, known: &Value, path: &str, out: &mut Vec<String>) {
    match (raw, known) {
        (Value::Object(raw), known) => {
            let known = known.as_object();
            for (key, value) in raw {
                let child = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                if matches!(child.as_str(), "metadata" | "apiVersion" | "kind") || key == "openAPIV3Schema" {
                    continue;
                }
                match known.and_then(|k| k.get(key)) {
                    Some(k) => diff_fields(value, k, &child, out),
                    // A field Go leaves out when empty is still known: it decoded.
                    None if is_empty_value(value) => {}
                    None => out.push(child),
                }
            }
        }
        (Value::Array(raw), Value::Array(known)) => {
            for (i, (r, k)) in raw.iter().zip(known).enumerate() {
                diff_fields(r, k, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn is_empty_value(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_with_kube_shape() {
        let raw = json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "scope": "Namespaced",
                "names": {"plural": "crontabs", "kind": "CronTab"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}, "subresources": {"status": {}}}]}
        });
        let crd = CustomResourceDefinition::from_value(&raw).unwrap();
        assert!(crd.spec.versions[0].has_status_subresource());
        let out = crd.to_value();
        assert_eq!(
            out["status"],
            json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": null})
        );
        assert_eq!(out["spec"]["versions"][0]["subresources"], json!({"status": {}}));
        assert_eq!(out["spec"]["names"], json!({"plural": "crontabs", "kind": "CronTab"}));
    }

    #[test]
    fn unknown_fields_are_named_like_strict_decoding() {
        let raw = json!({"spec": {"group": "a.b", "foo": 1, "versions": [{"name": "v1", "bar": true}],
            "names": {"plural": "x", "kind": "X"}}, "status": {"acceptedNames": {"plural": ""}}});
        assert_eq!(unknown_fields(&raw), vec!["spec.foo", "spec.versions[0].bar"]);
    }
}
