//! The reviews: questions to the server's authenticator and authorizer, asked by POST and
//! answered in the `status` of the object sent back (201), never stored.
//!
//! * `authorization.k8s.io/v1`: SelfSubjectAccessReview (may I?, `kubectl auth can-i`),
//!   SubjectAccessReview (may they?), LocalSubjectAccessReview (may they, in this namespace?),
//!   SelfSubjectRulesReview (what may I do here?, `kubectl auth can-i --list`);
//! * `authentication.k8s.io/v1`: SelfSubjectReview (who am I?, `kubectl auth whoami`) and
//!   TokenReview (whose token is this?).
//!
//! Asking is itself authorized as a `create` of the review before it gets here; the default
//! roles let every authenticated user ask the self reviews.

use http::HeaderMap;
use listwatch_meta::{ApiError, Resource};
use serde_json::{Map, Value, json};

use super::rbac::PolicyRule;
use super::{Attributes, AuthorizationMode};
use crate::authn::UserInfo;
use crate::handlers::body_in;
use crate::response::{self, HttpResponse};
use crate::state::ApiState;

/// Whether `resource` is a review (answered here rather than stored).
pub fn is_review(resource: &Resource) -> bool {
    matches!(resource.group, "authorization.k8s.io" | "authentication.k8s.io") && resource.verbs == ["create"]
}

/// Answers a POST of a review.
pub async fn create(
    state: &ApiState,
    resource: &'static Resource,
    namespace: Option<&str>,
    user: &UserInfo,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<HttpResponse, ApiError> {
    // kubectl's typed clients send protobuf; the answer is JSON, which they read as well.
    let mut review = if body_in::input_media_type(headers)? == "application/vnd.kubernetes.protobuf" {
        crate::handlers::schema::decode_protobuf(resource, body)?
    } else {
        body_in::decode_object(headers, body, resource)?
    };
    let spec = review.get("spec").cloned().unwrap_or(Value::Null);
    let status = match resource.plural {
        "selfsubjectaccessreviews" => access_review(state, resource, user.clone(), &spec, None).await?,
        "subjectaccessreviews" => access_review(state, resource, subject_of(resource, &spec)?, &spec, None).await?,
        "localsubjectaccessreviews" => {
            access_review(state, resource, subject_of(resource, &spec)?, &spec, namespace).await?
        }
        "selfsubjectrulesreviews" => rules_review(state, user, &spec).await,
        "selfsubjectreviews" => json!({"userInfo": user_info(user)}),
        "tokenreviews" => token_review(state, &spec),
        _ => return Err(ApiError::not_found_path()),
    };
    review.insert("apiVersion".into(), Value::String(resource.api_version()));
    review.insert("kind".into(), Value::String(resource.kind.into()));
    let metadata = review.entry("metadata").or_insert_with(|| json!({}));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.entry("creationTimestamp").or_insert(Value::Null);
    }
    review.insert("status".into(), status);
    Ok(response::json(201, Value::Object(review).to_string()))
}

/// `UserInfo` as the reviews show it.
fn user_info(user: &UserInfo) -> Value {
    let mut info = Map::new();
    if !user.name.is_empty() {
        info.insert("username".into(), json!(user.name));
    }
    if !user.uid.is_empty() {
        info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        info.insert("extra".into(), json!(user.extra));
    }
    Value::Object(info)
}

/// The user a SubjectAccessReview asks about, or kube's 422 when it names no one.
fn subject_of(resource: &Resource, spec: &Value) -> Result<UserInfo, ApiError> {
    let text = |f: &str| spec.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).map(String::from).collect()
    };
    let user = UserInfo {
        name: text("user"),
        uid: text("uid"),
        groups: strings(spec.get("groups")),
        extra: spec
            .get("extra")
            .and_then(Value::as_object)
            .map(|extra| extra.iter().map(|(k, v)| (k.clone(), strings(Some(v)))).collect())
            .unwrap_or_default(),
    };
    if user.name.is_empty() && user.groups.is_empty() {
        return Err(invalid(resource, "spec.user", "\"\"", "at least one of user or group must be specified"));
    }
    Ok(user)
}

fn invalid(resource: &Resource, field: &str, value: &str, detail: &str) -> ApiError {
    let cause = listwatch_meta::status::StatusCause::new(
        "FieldValueInvalid",
        format!("Invalid value: {value}: {detail}"),
        field,
    );
    ApiError::invalid(resource.group, resource.kind, "", vec![cause])
}

/// The status of an access review of `user`: the attributes the spec gives, decided by the
/// server's authorizer.
async fn access_review(
    state: &ApiState,
    resource: &Resource,
    user: UserInfo,
    spec: &Value,
    local_namespace: Option<&str>,
) -> Result<Value, ApiError> {
    let resource_attributes = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource_attributes = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    let attributes = match (resource_attributes, non_resource_attributes) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                resource,
                "spec.nonResourceAttributes",
                "{}",
                "cannot be specified in combination with resourceAttributes",
            ));
        }
        (None, None) => {
            return Err(invalid(
                resource,
                "spec.resourceAttributes",
                "\"null\"",
                "exactly one of nonResourceAttributes or resourceAttributes must be specified",
            ));
        }
        (Some(r), None) => {
            let text = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
            Attributes {
                verb: text("verb"),
                resource_request: true,
                api_group: text("group"),
                api_version: text("version"),
                resource: text("resource"),
                subresource: text("subresource"),
                namespace: text("namespace"),
                name: text("name"),
                ..Attributes::default()
            }
        }
        (None, Some(n)) => {
            if local_namespace.is_some() {
                return Err(invalid(
                    resource,
                    "spec.nonResourceAttributes",
                    "{}",
                    "disallowed on this kind of request",
                ));
            }
            let text = |f: &str| n.get(f).and_then(Value::as_str).unwrap_or_default().to_string();
            Attributes { verb: text("verb"), path: text("path"), ..Attributes::default() }
        }
    };
    if let Some(namespace) = local_namespace
        && attributes.namespace != namespace
    {
        return Err(ApiError::bad_request(format!(
            "spec.resourceAttributes.namespace must match namespace: {namespace}"
        )));
    }
    let decision = super::authorize(state, &user, &attributes).await;
    let mut status = Map::new();
    status.insert("allowed".into(), json!(decision.is_allowed()));
    if !decision.reason().is_empty() {
        status.insert("reason".into(), json!(decision.reason()));
    }
    Ok(Value::Object(status))
}

/// What `user` may do in the spec's namespace (kube's rule resolvers: everything under
/// AlwaysAllow, else `system:masters`' and the RBAC rules that apply).
async fn rules_review(state: &ApiState, user: &UserInfo, spec: &Value) -> Value {
    let namespace = spec.get("namespace").and_then(Value::as_str).unwrap_or_default();
    let (rules, errors) = match state.config.authorization {
        AuthorizationMode::AlwaysAllow => (vec![everything(), everywhere()], Vec::new()),
        AuthorizationMode::Rbac => super::policy(state).await.rules_for(user, namespace),
    };
    let resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r| !r.resources.is_empty())
        .map(|r| {
            let mut rule = json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                rule["resourceNames"] = json!(r.resource_names);
            }
            rule
        })
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r| !r.non_resource_urls.is_empty())
        .map(|r| json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
}

fn everything() -> PolicyRule {
    PolicyRule {
        verbs: vec!["*".into()],
        api_groups: vec!["*".into()],
        resources: vec!["*".into()],
        ..PolicyRule::default()
    }
}

fn everywhere() -> PolicyRule {
    PolicyRule { verbs: vec!["*".into()], non_resource_urls: vec!["*".into()], ..PolicyRule::default() }
}

/// A TokenReview: whether the server's authenticators know `spec.token`, and as whom.
fn token_review(state: &ApiState, spec: &Value) -> Value {
    let token = spec.get("token").and_then(Value::as_str).unwrap_or_default();
    match state.config.authentication.authenticate_token(token) {
        Some(user) => json!({"authenticated": true, "user": user_info(&user)}),
        None => json!({"user": {}}),
    }
}
