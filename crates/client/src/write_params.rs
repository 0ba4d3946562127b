//! Options of the write verbs: the patch types a PATCH can carry, and `metav1.DeleteOptions`.

use serde::Serialize;
use serde_json::Value;

/// A PATCH body and its content type (spec apiserver-protocol.md §9; server-side apply is not
/// offered: listwatch answers it with 415).
#[derive(Clone, Debug, PartialEq)]
pub enum Patch {
    /// `application/merge-patch+json` (RFC 7386): `null` deletes a field, lists are replaced.
    Merge(Value),
    /// `application/json-patch+json` (RFC 6902): a list of operations.
    Json(Value),
    /// `application/strategic-merge-patch+json`: lists merged by their merge keys (built-in
    /// kinds only), with `$patch` directives.
    Strategic(Value),
}

impl Patch {
    /// The `Content-Type` the PATCH is sent with.
    pub fn content_type(&self) -> &'static str {
        match self {
            Patch::Merge(_) => "application/merge-patch+json",
            Patch::Json(_) => "application/json-patch+json",
            Patch::Strategic(_) => "application/strategic-merge-patch+json",
        }
    }

    /// The patch document itself.
    pub fn body(&self) -> &Value {
        match self {
            Patch::Merge(body) | Patch::Json(body) | Patch::Strategic(body) => body,
        }
    }
}

/// What happens to an object's dependents when it is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PropagationPolicy {
    /// The owner goes at once; the garbage collector deletes the dependents after.
    Background,
    /// The owner stays (with a `foregroundDeletion` finalizer) until its dependents are gone.
    Foreground,
    /// The dependents stay, without their reference to the owner.
    Orphan,
}

/// `metav1.Preconditions`: the delete happens only if the object still has this uid and/or
/// resourceVersion (409 Conflict otherwise).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The uid the object must still have (not a new object of the same name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The resourceVersion the object must still be at (nobody changed it since).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// `metav1.DeleteOptions`, sent as the DELETE request's body (as kubectl does).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteParams {
    /// Seconds before a pod is removed (0: at once); the kind's default when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i64>,
    /// What happens to the object's dependents; the kind's default when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<PropagationPolicy>,
    /// Conditions the object must meet for the delete to happen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preconditions: Option<Preconditions>,
}

impl DeleteParams {
    /// The `DeleteOptions` document.
    pub(crate) fn to_body(&self) -> Value {
        let mut body = serde_json::to_value(self).expect("DeleteParams serialize");
        body["kind"] = "DeleteOptions".into();
        body["apiVersion"] = "v1".into();
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_options_have_kube_field_names() {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            propagation_policy: Some(PropagationPolicy::Foreground),
            preconditions: Some(Preconditions { uid: Some("u1".into()), resource_version: None }),
        };
        assert_eq!(
            params.to_body(),
            serde_json::json!({
                "kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                "propagationPolicy": "Foreground", "preconditions": {"uid": "u1"},
            })
        );
        assert_eq!(DeleteParams::default().to_body(), serde_json::json!({"kind": "DeleteOptions", "apiVersion": "v1"}));
    }
}
