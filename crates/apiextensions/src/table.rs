//! Server-side printing of custom resources (`as=Table`), as kube's CRD table convertor does
//! it (`pkg/registry/customresource/tableconvertor/tableconvertor.go`): a `Name` column
//! (string, format `name`), then the version's `additionalPrinterColumns` in order, or only an
//! `Age` column (`.metadata.creationTimestamp`, type `date`) when it has none. A cell is the
//! first value the column's JSONPath finds (missing ⇒ `null`, shown as `<none>`): `string`
//! columns print it as Go's `%v` would, `integer`/`number`/`boolean` keep it typed when it has
//! that type (else `null`), `date` turns an RFC 3339 time into an age (`5m`) or `<invalid>`.
//! Wrapping cells into rows with `object` and the list metadata is the apiserver's, as for
//! built-in kinds.

use std::time::SystemTime;

use listwatch_gocompat::duration::human_duration;
use serde_json::{Value, json};

use crate::crd::{CustomResourceColumnDefinition, CustomResourceDefinitionVersion};
use crate::go_value::go_v;
use crate::jsonpath::JsonPath;

/// ObjectMeta's description of `name` (kube's `Name` column description).
pub const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
/// ObjectMeta's description of `creationTimestamp` (the default `Age` column's).
pub const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The columns of one version, compiled.
#[derive(Clone, Debug)]
pub struct Columns {
    definitions: Vec<CustomResourceColumnDefinition>,
    paths: Vec<JsonPath>,
}

/// A column whose JSONPath does not parse (kube: `unrecognized column definition ".x["`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnrecognizedColumn(pub String);

impl Columns {
    /// Compiles the printer columns of `version` (the default `Age` column when it has none).
    pub fn of(version: &CustomResourceDefinitionVersion) -> Result<Columns, UnrecognizedColumn> {
        let definitions = if version.additional_printer_columns.is_empty() {
            vec![CustomResourceColumnDefinition {
                name: "Age".into(),
                type_: "date".into(),
                description: CREATION_TIMESTAMP_DESCRIPTION.into(),
                json_path: ".metadata.creationTimestamp".into(),
                ..Default::default()
            }]
        } else {
            version.additional_printer_columns.clone()
        };
        let paths = definitions
            .iter()
            .map(|c| {
                JsonPath::parse(&c.json_path)
                    .map_err(|_| UnrecognizedColumn(format!("unrecognized column definition {:?}", c.json_path)))
            })
            .collect::<Result<_, _>>()?;
        Ok(Columns { definitions, paths })
    }

    /// `columnDefinitions` of the Table.
    pub fn definitions(&self) -> Value {
        let mut out = vec![
            json!({"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0}),
        ];
        for c in &self.definitions {
            let description = if c.description.is_empty() {
                format!("Custom resource definition column (in JSONPath format): {}", c.json_path)
            } else {
                c.description.clone()
            };
            out.push(json!({"name": c.name, "type": c.type_, "format": c.format, "description": description, "priority": c.priority}));
        }
        Value::Array(out)
    }

    /// The cells of one object's row, the name first; `now` computes ages.
    pub fn cells(&self, object: &Value, now: SystemTime) -> Vec<Value> {
        let name = object.pointer("/metadata/name").cloned().unwrap_or(Value::String(String::new()));
        let mut cells = vec![name];
        for (column, path) in self.definitions.iter().zip(&self.paths) {
            let cell = match path.first(object) {
                None | Some(Value::Null) => Value::Null,
                Some(value) if column.type_ == "string" => Value::String(go_v(value)),
                Some(value) => typed_cell(&column.type_, value, now),
            };
            cells.push(cell);
        }
        cells
    }
}

fn typed_cell(type_: &str, value: &Value, now: SystemTime) -> Value {
    match (type_, value) {
        ("integer", Value::Number(n)) => {
            n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from)
        }
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => Value::String(match humantime::parse_rfc3339_weak(s) {
            Ok(t) => age(t, now),
            Err(_) => "<invalid>".into(),
        }),
        _ => Value::Null,
    }
}

fn age(created: SystemTime, now: SystemTime) -> String {
    match now.duration_since(created) {
        Ok(d) => human_duration(d.as_secs() as i64),
        Err(e) if e.duration().as_secs() < 2 => "0s".into(),
        Err(_) => "<invalid>".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CustomResourceDefinition;
    use std::time::Duration;

    fn fixture() -> CustomResourceDefinition {
        let raw: Value = serde_json::from_str(include_str!("../tests/fixtures/crontab-crd.json")).unwrap();
        CustomResourceDefinition::from_value(&raw).unwrap()
    }

    #[test]
    fn printer_columns_become_cells() {
        let crd = fixture();
        let columns = Columns::of(&crd.spec.versions[0]).unwrap();
        let defs = columns.definitions();
        let names: Vec<&str> = defs.as_array().unwrap().iter().map(|d| d["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Schedule", "Replicas", "Ready", "Image", "Age"]);
        assert_eq!(defs[4]["priority"], 1);
        assert_eq!(defs[1]["description"], "Custom resource definition column (in JSONPath format): .spec.cronSpec");
        let now = humantime::parse_rfc3339("2026-01-01T00:05:00Z").unwrap();
        let cr = json!({"metadata": {"name": "c1", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"cronSpec": "* * * * */5", "replicas": 3},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(
            columns.cells(&cr, now),
            vec![json!("c1"), json!("* * * * */5"), json!(3), json!("True"), Value::Null, json!("5m")]
        );
        let odd = json!({"metadata": {"name": "c2", "creationTimestamp": "soon"}, "spec": {"replicas": "three"}});
        assert_eq!(columns.cells(&odd, now)[2..], [Value::Null, Value::Null, Value::Null, json!("<invalid>")]);
    }

    #[test]
    fn age_is_the_default_column() {
        let mut crd = fixture();
        crd.spec.versions[0].additional_printer_columns.clear();
        let columns = Columns::of(&crd.spec.versions[0]).unwrap();
        assert_eq!(columns.definitions()[1]["name"], "Age");
        let created = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let cr = json!({"metadata": {"name": "x", "creationTimestamp": humantime::format_rfc3339_seconds(created).to_string()}});
        assert_eq!(columns.cells(&cr, created + Duration::from_secs(3 * 86400 + 7200))[1], json!("3d2h"));
    }
}
