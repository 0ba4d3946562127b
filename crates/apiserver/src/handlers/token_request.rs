//! `POST serviceaccounts/{name}/token` (kube's TokenRequest REST): a signed token for an
//! existing ServiceAccount, for the audiences asked (the issuer's by default), valid for
//! `expirationSeconds` (3600 by default; 10 minutes to 2^32 seconds). What `kubectl create
//! token NAME` asks for; the token authenticates as the account (`authn::service_account`).

use bytes::Bytes;
use http::HeaderMap;
use listwatch_meta::status::StatusCause;
use listwatch_meta::{ApiError, Resource};
use serde_json::{Value, json};

use super::body_in;
use crate::authn::service_account::Claims;
use crate::registry::ResourceStore;
use crate::request::ResourceRequest;
use crate::response::{self, HttpResponse};
use crate::state::ApiState;

/// The TokenRequest kind, for decoding bodies against its schema.
static TOKEN_REQUEST: Resource = Resource {
    group: "authentication.k8s.io",
    version: "v1",
    plural: "tokenrequests",
    singular: "tokenrequest",
    kind: "TokenRequest",
    storage_prefix: "tokenrequests",
    ..Resource::EMPTY
};

/// POST of a TokenRequest.
pub async fn create(
    state: &ApiState,
    store: &ResourceStore,
    req: &ResourceRequest,
    headers: &HeaderMap,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let mut request = match body_in::input_media_type(headers)? {
        "application/vnd.kubernetes.protobuf" => super::schema::decode_protobuf(&TOKEN_REQUEST, &body)?,
        _ => body_in::decode_object(headers, &body, &TOKEN_REQUEST)?,
    };
    let name = req.name.as_deref().unwrap_or_default();
    let namespace = req.namespace.as_deref().unwrap_or_default();
    let Some(account) = store.read(Some(namespace), name).await? else {
        return Err(ApiError::not_found(&store.resource.group_resource(), name));
    };
    let named = request.get("metadata").and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or_default();
    if !named.is_empty() && named != name {
        return Err(ApiError::bad_request(format!(
            "the name of the TokenRequest ({named}) must match the service account name ({name})"
        )));
    }
    let spec = request.get("spec").cloned().unwrap_or(Value::Null);
    let seconds = spec.get("expirationSeconds").and_then(Value::as_i64).unwrap_or(3600);
    let invalid = |detail: &str| {
        let cause = StatusCause::new(
            "FieldValueInvalid",
            format!("Invalid value: {seconds}: {detail}"),
            "spec.expirationSeconds",
        );
        ApiError::invalid(TOKEN_REQUEST.group, TOKEN_REQUEST.kind, "", vec![cause])
    };
    if seconds < 600 {
        return Err(invalid("may not specify a duration less than 10 minutes"));
    }
    if seconds > 1 << 32 {
        return Err(invalid("may not specify a duration larger than 2^32 seconds"));
    }
    let tokens = &state.config.authentication.service_accounts;
    let mut audiences: Vec<String> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    if audiences.is_empty() {
        audiences.push(tokens.issuer().to_string());
    }
    let claims = Claims { namespace: namespace.into(), name: name.into(), uid: account.uid().into() };
    let (token, expiry) = tokens.issue(&claims, &audiences, seconds);
    let expiry = std::time::UNIX_EPOCH + std::time::Duration::from_secs(expiry.max(0) as u64);
    request.insert("kind".into(), json!("TokenRequest"));
    request.insert("apiVersion".into(), json!("authentication.k8s.io/v1"));
    request.insert("metadata".into(), json!({"name": name, "namespace": namespace, "creationTimestamp": Value::Null}));
    request.insert(
        "spec".into(),
        json!({"audiences": audiences, "expirationSeconds": seconds, "boundObjectRef": spec.get("boundObjectRef").cloned().unwrap_or(Value::Null)}),
    );
    request.insert(
        "status".into(),
        json!({"token": token, "expirationTimestamp": humantime::format_rfc3339_seconds(expiry).to_string()}),
    );
    Ok(response::json(201, Value::Object(request).to_string()))
}
