//! The AdmissionReview v1 a webhook is sent, and kube's checks of the one it answers
//! (`webhook/request/admissionreview.go`: `CreateV1AdmissionReview`,
//! `VerifyAdmissionResponse`) and the refusal made of a denial (`webhook/errors.ToStatusErr`).

use base64::Engine as _;
use listwatch_meta::ApiError;
use listwatch_meta::status::{Status, StatusDetails};
use listwatch_meta::validation::go_quote;
use serde_json::{Map, Value, json};

use crate::admission::request::Admission;

/// A webhook's verified answer.
pub(super) struct Answer {
    pub allowed: bool,
    /// The decoded JSON patch of a mutating webhook, if it sent one.
    pub patch: Option<Value>,
    /// `response.status`, as sent.
    pub result: Option<Value>,
    pub warnings: Vec<String>,
}

/// The request body and the uid the answer must carry.
pub(super) fn request(
    admission: &Admission<'_>,
    name: &str,
    old: Option<&Map<String, Value>>,
    new: Option<&Map<String, Value>>,
) -> (String, Vec<u8>) {
    let uid = uuid::Uuid::new_v4().to_string();
    let mut request = admission.attributes(name);
    request.insert("uid".into(), json!(uid));
    request.insert("object".into(), json!(new));
    request.insert("oldObject".into(), json!(old));
    let review = json!({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request});
    (uid, serde_json::to_vec(&review).expect("JSON values encode"))
}

/// `VerifyAdmissionResponse` for an `admission.k8s.io/v1` answer; the error is kube's reason.
pub(super) fn verify(uid: &str, mutating: bool, body: &[u8]) -> Result<Answer, String> {
    let review: Value = serde_json::from_slice(body)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {}", e.to_string().to_lowercase()))?;
    let Value::Object(review) = review else {
        return Err("couldn't get version/kind; json parse error: the answer is not a JSON object".into());
    };
    let text = |key: &str| review.get(key).and_then(Value::as_str).unwrap_or_default();
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if kind.is_empty() {
        return Err(format!("Object 'Kind' is missing in '{}'", String::from_utf8_lossy(body)));
    }
    let Some(response) = review.get("response").filter(|r| !r.is_null()) else {
        return Err("webhook response was absent".into());
    };
    let answered_uid = response.get("uid").and_then(Value::as_str).unwrap_or_default();
    if answered_uid != uid {
        return Err(format!("expected response.uid={}, got {}", go_quote(uid), go_quote(answered_uid)));
    }
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {}",
            if group.is_empty() {
                format!("/{version}, Kind={kind}")
            } else {
                format!("{group}/{version}, Kind={kind}")
            }
        ));
    }
    let patch = response.get("patch").and_then(Value::as_str).filter(|p| !p.is_empty());
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    let mut decoded = None;
    if mutating {
        match (patch, patch_type) {
            (Some(_), None) => return Err("webhook returned response.patch but not response.patchType".into()),
            (None, Some(_)) => return Err("webhook returned response.patchType but not response.patch".into()),
            (Some(patch), Some(patch_type)) => {
                let patch_type = patch_type.as_str().unwrap_or_default();
                if patch_type.is_empty() {
                    return Err(format!("webhook returned invalid response.patchType of {}", go_quote(patch_type)));
                }
                if patch_type != "JSONPatch" {
                    return Err(format!("unsupported patch type {}", go_quote(patch_type)));
                }
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(patch)
                    .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?;
                let value: Value = serde_json::from_slice(&bytes)
                    .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?;
                if !value.is_array() {
                    return Err(
                        "received undecodable patch in webhook response: json: cannot unmarshal object into Go value of type jsonpatch.Patch".into(),
                    );
                }
                decoded = Some(value);
            }
            (None, None) => {}
        }
    } else {
        if patch.is_some() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    let warnings = response
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(String::from)
        .collect();
    Ok(Answer {
        allowed: response.get("allowed").and_then(Value::as_bool).unwrap_or(false),
        patch: decoded,
        result: response.get("status").filter(|s| !s.is_null()).cloned(),
        warnings,
    })
}

/// `ToStatusErr`: a denial as the Status the client gets, at least 400 and a Failure, its
/// message prefixed with who denied.
pub(super) fn refusal(hook: &str, result: Option<&Value>) -> ApiError {
    let field = |key: &str| result.and_then(|r| r.get(key)).and_then(Value::as_str).unwrap_or_default().to_string();
    let code = result.and_then(|r| r.get("code")).and_then(Value::as_u64).unwrap_or(0);
    // Below 400 becomes 400, as kube's; above 999 HTTP has no status to carry it.
    let code = if code < 400 { 400 } else { code.min(999) as u16 };
    let denied = format!("admission webhook {} denied the request", go_quote(hook));
    let (message, reason) = (field("message"), field("reason"));
    let message = if !message.is_empty() {
        format!("{denied}: {message}")
    } else if !reason.is_empty() {
        format!("{denied}: {reason}")
    } else {
        format!("{denied} without explanation")
    };
    let details =
        result.and_then(|r| r.get("details")).and_then(|d| serde_json::from_value::<StatusDetails>(d.clone()).ok());
    ApiError(Box::new(Status::failure(code, &reason, message, details)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(response: Value) -> Vec<u8> {
        serde_json::to_vec(
            &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
        )
        .unwrap()
    }

    #[test]
    fn answers_are_checked_as_kube_checks_them() {
        let err = |body: &[u8], mutating| verify("u1", mutating, body).err().unwrap();
        assert_eq!(
            err(&answer(json!({"uid": "u2", "allowed": true})), false),
            "expected response.uid=\"u1\", got \"u2\""
        );
        assert_eq!(
            err(br#"{"apiVersion":"v1","kind":"Status","response":{"uid":"u1"}}"#, false),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /v1, Kind=Status"
        );
        assert_eq!(
            err(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#, false),
            "webhook response was absent"
        );
        let patch = base64::engine::general_purpose::STANDARD.encode(br#"[{"op":"add","path":"/x","value":1}]"#);
        assert_eq!(
            err(&answer(json!({"uid": "u1", "allowed": true, "patch": patch})), true),
            "webhook returned response.patch but not response.patchType"
        );
        assert_eq!(
            err(&answer(json!({"uid": "u1", "allowed": true, "patch": patch, "patchType": "JSONPatch"})), false),
            "validating webhook may not return response.patch"
        );
        let ok = verify(
            "u1",
            true,
            &answer(json!({"uid": "u1", "allowed": true, "patch": patch, "patchType": "JSONPatch", "warnings": ["w"]})),
        )
        .unwrap();
        assert!(ok.allowed);
        assert_eq!(ok.patch.unwrap()[0]["op"], "add");
        assert_eq!(ok.warnings, vec!["w"]);
        assert!(err(b"not json", false).starts_with("couldn't get version/kind; json parse error: "));
    }

    #[test]
    fn a_denial_is_at_least_a_400_and_names_the_webhook() {
        let e = refusal("deny.example.com", Some(&json!({"code": 200, "message": "no"})));
        assert_eq!(e.code(), 400);
        assert_eq!(e.status().message, "admission webhook \"deny.example.com\" denied the request: no");
        let e = refusal("deny.example.com", Some(&json!({"code": 403, "reason": "Forbidden"})));
        assert_eq!((e.code(), e.reason()), (403, "Forbidden"));
        assert_eq!(e.status().message, "admission webhook \"deny.example.com\" denied the request: Forbidden");
        assert_eq!(
            refusal("deny.example.com", None).status().message,
            "admission webhook \"deny.example.com\" denied the request without explanation"
        );
    }
}
