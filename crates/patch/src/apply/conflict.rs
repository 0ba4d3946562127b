//! Why an apply fails, and kube's texts for it (`managedfields/internal/
//! conflict.go`, `api/errors` `NewApplyConflict`).

use serde_json::{Map, Value, json};

use super::fieldpath::{Path, go_quote, path_string};
use super::managed::parse_identifier;

/// A field another manager owns with a different value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The other manager's identifier, e.g. `{"manager":"m1","operation":"Apply"}`.
    pub manager: String,
    /// The conflicting field.
    pub path: Path,
}

impl Conflict {
    /// The field as kube prints it, e.g. `.spec.replicas`.
    pub fn field(&self) -> String {
        path_string(&self.path)
    }

    /// The other manager as kube prints it: `"m1"`, or for an `Update` entry
    /// `"kubectl-edit" using apps/v1`, with ` with subresource "status"`
    /// for a subresource.
    pub fn manager_text(&self) -> String {
        print_manager(&self.manager)
    }
}

/// kube's `printManager`.
fn print_manager(identifier: &str) -> String {
    let Some(identity) = parse_identifier(identifier) else {
        return go_quote(identifier);
    };
    let mut text = go_quote(&identity.manager);
    if !identity.subresource.is_empty() {
        text = format!("{text} with subresource {}", go_quote(&identity.subresource));
    }
    if identity.operation == "Update" {
        text = format!("{text} using {}", identity.api_version);
    }
    text
}

/// kube's `getConflictMessage`: `Apply failed with 1 conflict: conflict with
/// "m1": .spec.replicas`, or for several, one `conflicts with` line per
/// manager (managers sorted by identifier) and one `- path` line per field.
pub(crate) fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [only] = conflicts {
        return format!("Apply failed with 1 conflict: conflict with {}: {}", only.manager_text(), only.field());
    }
    let mut managers: Vec<&str> = conflicts.iter().map(|c| c.manager.as_str()).collect();
    managers.sort_unstable();
    managers.dedup();
    let mut lines = Vec::new();
    for manager in managers {
        lines.push(format!("conflicts with {}:", print_manager(manager)));
        lines.extend(conflicts.iter().filter(|c| c.manager == manager).map(|c| format!("- {}", c.field())));
    }
    format!("Apply failed with {} conflicts: {}", conflicts.len(), lines.join("\n"))
}

/// Why [`apply`](super::apply()) failed. `Display` is the message of the
/// Status kube answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change: 409 `Conflict`, one
    /// `FieldManagerConflict` cause per field.
    #[error("{}", conflict_message(.0))]
    Conflict(Vec<Conflict>),
    /// A body kube refuses as a bad request (400 `BadRequest`): `invalid
    /// object type: /, Kind=`, `metadata.managedFields must be nil`.
    #[error("{0}")]
    BadRequest(String),
    /// A body that does not fit the schema, or stored managedFields that do
    /// not decode: kube returns the plain error, a 500 with an empty reason
    /// (`failed to create typed patch object (…): .spec.foo: field not
    /// declared in schema`).
    #[error("{0}")]
    Internal(String),
}

impl ApplyError {
    /// The HTTP status kube answers with.
    pub fn http_status(&self) -> u16 {
        match self {
            ApplyError::Conflict(_) => 409,
            ApplyError::BadRequest(_) => 400,
            ApplyError::Internal(_) => 500,
        }
    }

    /// The Status `reason` (empty for the 500s).
    pub fn status_reason(&self) -> &'static str {
        match self {
            ApplyError::Conflict(_) => "Conflict",
            ApplyError::BadRequest(_) => "BadRequest",
            ApplyError::Internal(_) => "",
        }
    }

    /// The Status `details.causes`: for a conflict, one
    /// `{"reason":"FieldManagerConflict","message":"conflict with \"m1\"","field":".spec.replicas"}`
    /// per field; otherwise none.
    pub fn causes(&self) -> Vec<Value> {
        match self {
            ApplyError::Conflict(conflicts) => conflicts
                .iter()
                .map(|c| {
                    json!({"reason": "FieldManagerConflict", "message": format!("conflict with {}", c.manager_text()), "field": c.field()})
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The whole `Status` object kube answers with, keys in kube's order.
    pub fn status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.to_string()));
        if !self.status_reason().is_empty() {
            status.insert("reason".into(), json!(self.status_reason()));
        }
        if let ApplyError::Conflict(_) = self {
            status.insert("details".into(), json!({"causes": self.causes()}));
        }
        status.insert("code".into(), json!(self.http_status()));
        Value::Object(status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::fieldpath::PathElement;

    fn conflict(manager: &str, fields: &[&str]) -> Conflict {
        Conflict { manager: manager.to_owned(), path: fields.iter().map(|f| PathElement::field(*f)).collect() }
    }

    #[test]
    fn messages_match_kube() {
        let one =
            ApplyError::Conflict(vec![conflict(r#"{"manager":"m1","operation":"Apply"}"#, &["spec", "replicas"])]);
        assert_eq!(one.to_string(), r#"Apply failed with 1 conflict: conflict with "m1": .spec.replicas"#);
        assert_eq!(
            one.status(),
            json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
                "message":"Apply failed with 1 conflict: conflict with \"m1\": .spec.replicas","reason":"Conflict",
                "details":{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"m1\"","field":".spec.replicas"}]},"code":409})
        );
        let several = ApplyError::Conflict(vec![
            conflict(r#"{"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1"}"#, &["spec", "a"]),
            conflict(r#"{"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1"}"#, &["spec", "b"]),
            conflict(
                r#"{"manager":"c","operation":"Update","apiVersion":"v1","subresource":"status"}"#,
                &["status", "x"],
            ),
        ]);
        assert_eq!(
            several.to_string(),
            "Apply failed with 3 conflicts: conflicts with \"c\" with subresource \"status\" using v1:\n- .status.x\n\
             conflicts with \"kubectl-edit\" using apps/v1:\n- .spec.a\n- .spec.b"
        );
        assert_eq!(several.causes()[2]["message"], "conflict with \"c\" with subresource \"status\" using v1");
    }
}
