//! CRD validation against kube's messages: shared/spec §7 #1–#2 and §1.2's table, and the
//! kubebuilder-style fixture passing clean.

use serde_json::{Value, json};

use super::*;
use crate::defaults::set_defaults;
use crate::strategy::prepare_for_create;

fn fixture() -> Value {
    serde_json::from_str(include_str!("../../tests/fixtures/crontab-crd.json")).unwrap()
}

fn create(raw: &Value) -> Vec<String> {
    let mut crd = CustomResourceDefinition::from_value(raw).unwrap();
    set_defaults(&mut crd);
    prepare_for_create(&mut crd);
    validate_create(&crd).iter().map(ToString::to_string).collect()
}

fn schema_of(raw: &mut Value) -> &mut Value {
    &mut raw["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
}

#[test]
fn the_fixture_is_valid() {
    assert_eq!(create(&fixture()), Vec::<String>::new());
}

#[test]
fn name_must_be_plural_dot_group() {
    let mut raw = fixture();
    raw["metadata"]["name"] = json!("foo.stable.example.com");
    let mut crd = CustomResourceDefinition::from_value(&raw).unwrap();
    set_defaults(&mut crd);
    prepare_for_create(&mut crd);
    let errs = validate_create(&crd);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].as_cause(),
        (
            "metadata.name",
            "FieldValueInvalid",
            "Invalid value: \"foo.stable.example.com\": must be spec.names.plural+\".\"+spec.group",
        )
    );
    let status = invalid_error(&crd, &errs);
    assert_eq!(status.code(), 422);
    assert_eq!(
        status.status().message,
        "CustomResourceDefinition.apiextensions.k8s.io \"foo.stable.example.com\" is invalid: metadata.name: Invalid value: \"foo.stable.example.com\": must be spec.names.plural+\".\"+spec.group"
    );
    let details = status.status().details.clone().unwrap();
    assert_eq!((details.group.as_str(), details.kind.as_str()), ("apiextensions.k8s.io", "CustomResourceDefinition"));
}

#[test]
fn a_property_without_type_is_reported_under_the_hoisted_schema() {
    // One version: kube validates the schema as spec.validation (see the module doc).
    let mut raw = fixture();
    schema_of(&mut raw)["properties"]["spec"].as_object_mut().unwrap().remove("type");
    assert_eq!(
        create(&raw),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        ]
    );
    // Two versions with different schemas: per-version paths.
    let mut two = fixture();
    let mut v2 = two["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"]["openAPIV3Schema"]["properties"]["spec"].as_object_mut().unwrap().remove("type");
    two["spec"]["versions"].as_array_mut().unwrap().push(v2);
    // Identical selectable fields are hoisted even though the schemas are not (kube 1.32).
    let errs = create(&two);
    assert_eq!(
        errs,
        vec![
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
            "spec.selectableFields: Invalid value: \"\": selectableFields may only be set when validations.schema is included",
        ]
    );
    two["spec"]["versions"][1].as_object_mut().unwrap().remove("selectableFields");
    assert_eq!(
        create(&two),
        vec![
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"
        ]
    );
}

#[test]
fn versions_and_names() {
    let mut raw = fixture();
    raw["spec"]["versions"][0].as_object_mut().unwrap().remove("schema");
    raw["spec"]["versions"][0]["storage"] = json!(false);
    raw["spec"]["names"]["listKind"] = json!("CronTab");
    let errs = create(&raw);
    assert_eq!(errs[0], "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required");
    assert!(errs[1].starts_with("spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{"));
    assert!(errs[1].ends_with(": must have exactly one version marked as storage version"));
    assert!(errs.contains(
        &"spec.names.listKind: Invalid value: \"CronTab\": kind and listKind may not be the same".to_string()
    ));
}

#[test]
fn schema_keyword_errors() {
    let mut raw = fixture();
    let spec = &mut schema_of(&mut raw)["properties"]["spec"]["properties"];
    spec["ref"] = json!({"$ref": "#/definitions/x"});
    spec["weird"] = json!({"type": "foo"});
    spec["uniq"] = json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}});
    spec["both"] =
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}});
    spec["lt"] = json!({"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}});
    let errs = create(&raw);
    let p = "spec.validation.openAPIV3Schema.properties[spec].properties";
    for expected in [
        format!("{p}[ref].$ref: Forbidden: $ref is not supported"),
        format!(
            "{p}[weird].type: Unsupported value: \"foo\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
        ),
        format!(
            "{p}[uniq].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        ),
        format!("{p}[both].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"),
        format!(
            "{p}[lt].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""
        ),
    ] {
        assert!(errs.contains(&expected), "missing {expected:?} in {errs:#?}");
    }
}

#[test]
fn status_subresource_restricts_the_root() {
    let mut raw = fixture();
    schema_of(&mut raw)["anyOf"] = json!([{"required": ["spec"]}]);
    let errs = create(&raw);
    assert!(
        errs[0].starts_with("spec.validation.openAPIV3Schema: Invalid value: apiextensions.JSONSchemaProps{"),
        "{errs:?}"
    );
    assert!(errs[0].ends_with("fields are allowed at the root of the schema if the status subresource is enabled"));
}

#[test]
fn list_map_keys_need_a_default_or_required() {
    let mut raw = fixture();
    schema_of(&mut raw)["properties"]["spec"]["properties"]["ports"]["items"]["required"] = json!([]);
    assert_eq!(
        create(&raw),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[ports].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
        ]
    );
}

#[test]
fn scale_paths_and_printer_columns() {
    let mut raw = fixture();
    raw["spec"]["versions"][0]["subresources"]["scale"]["specReplicasPath"] = json!(".status.replicas");
    raw["spec"]["versions"][0]["additionalPrinterColumns"][0]["type"] = json!("text");
    assert_eq!(
        create(&raw),
        vec![
            "spec.subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
            "spec.additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
        ]
    );
}

#[test]
fn preserve_unknown_fields_and_groups() {
    let mut raw = fixture();
    raw["spec"]["preserveUnknownFields"] = json!(true);
    assert_eq!(
        create(&raw),
        vec![
            "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"
        ]
    );
    let mut raw = fixture();
    raw["spec"]["group"] = json!("stable");
    raw["metadata"]["name"] = json!("crontabs.stable");
    assert_eq!(create(&raw), vec!["spec.group: Invalid value: \"stable\": should be a domain with at least one dot"]);
}

#[test]
fn update_immutability() {
    let mut old = CustomResourceDefinition::from_value(&fixture()).unwrap();
    set_defaults(&mut old);
    prepare_for_create(&mut old);
    old.status.conditions = Some(vec![crate::crd::CustomResourceDefinitionCondition {
        type_: "Established".into(),
        status: "True".into(),
        ..Default::default()
    }]);
    let mut new = old.clone();
    new.spec.scope = "Cluster".into();
    new.spec.names.plural = "crons".into();
    let errs: Vec<String> = validate_update(&new, &old).iter().map(ToString::to_string).collect();
    assert_eq!(
        errs,
        vec![
            "spec.scope: Invalid value: \"Cluster\": field is immutable",
            "spec.names.plural: Invalid value: \"crons\": field is immutable",
        ]
    );
}
