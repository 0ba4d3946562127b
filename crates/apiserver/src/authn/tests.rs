//! The authenticator chain decides as kube's does.

use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

use super::*;

fn request(path: &str, headers: &[(&str, &str)], peer: Option<&str>) -> http::request::Parts {
    let mut builder = http::Request::get(path);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let (mut parts, ()) = builder.body(()).unwrap().into_parts();
    if let Some(pem) = peer {
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(pem.as_bytes()).collect::<Result<_, _>>().unwrap();
        parts.extensions.insert(PeerCertificates(chain.into()));
    }
    parts
}

fn tokens() -> Option<Arc<TokenFile>> {
    Some(Arc::new(TokenFile::parse("good,alice,1001,\"dev,ops\"\n", "tokens.csv").unwrap()))
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(std::string::ToString::to_string).collect(),
        ..UserInfo::default()
    }
}

#[test]
fn without_authenticators_everyone_is_anonymous_whatever_the_token() {
    let auth = Authentication::default();
    let got = auth.authenticate(&request("/api/v1/pods", &[("Authorization", "Bearer anything")], None));
    assert_eq!(got, Ok(UserInfo::anonymous()));
}

#[test]
fn token_file_users_get_the_authenticated_group() {
    let auth = Authentication { tokens: tokens(), ..Default::default() };
    let alice = auth.authenticate(&request("/api", &[("Authorization", "Bearer good")], None)).unwrap();
    assert_eq!(
        alice,
        UserInfo {
            name: "alice".into(),
            uid: "1001".into(),
            groups: vec!["dev".into(), "ops".into(), ALL_AUTHENTICATED.into()],
            ..UserInfo::default()
        }
    );
    // The scheme is case-insensitive; the token is the second space-separated word.
    assert_eq!(
        auth.authenticate(&request("/api", &[("Authorization", "BEARER good extra")], None)).unwrap().name,
        "alice"
    );
}

#[test]
fn an_unknown_token_is_refused_even_with_anonymous_on() {
    let auth = Authentication { tokens: tokens(), ..Default::default() };
    assert_eq!(
        auth.authenticate(&request("/api", &[("Authorization", "Bearer bad")], None)),
        Err("invalid bearer token".into())
    );
    // Also on the public paths: presented credentials that fail are never anonymous.
    assert!(auth.authenticate(&request("/healthz", &[("Authorization", "Bearer bad")], None)).is_err());
    // Not a bearer token at all (another scheme, an empty token): no credentials.
    for header in ["Basic YTpi", "Bearer", "Bearer  good", ""] {
        assert_eq!(auth.authenticate(&request("/api", &[("Authorization", header)], None)), Ok(UserInfo::anonymous()));
    }
}

#[test]
fn anonymous_off_leaves_only_the_public_info_paths_open() {
    let auth = Authentication { tokens: tokens(), anonymous: false, ..Default::default() };
    assert!(auth.authenticate(&request("/api/v1/pods", &[], None)).is_err());
    assert!(auth.authenticate(&request("/healthz/etcd", &[], None)).is_err());
    for path in ["/healthz", "/livez", "/readyz", "/version", "/readyz?verbose"] {
        assert_eq!(auth.authenticate(&request(path, &[], None)), Ok(UserInfo::anonymous()), "{path}");
    }
    assert_eq!(auth.authenticate(&request("/api", &[("Authorization", "Bearer good")], None)).unwrap().name, "alice");
}

#[test]
fn websocket_subprotocol_tokens() {
    let auth = Authentication { tokens: tokens(), anonymous: false, ..Default::default() };
    let encoded = |token: &str| {
        format!(
            "base64url.bearer.authorization.k8s.io.{}",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token)
        )
    };
    let ws = |protocols: &str| {
        request(
            "/api/v1/pods?watch=1",
            &[("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Protocol", protocols)],
            None,
        )
    };
    assert_eq!(auth.authenticate(&ws(&format!("{}, v4.channel.k8s.io", encoded("good")))).unwrap().name, "alice");
    assert_eq!(auth.authenticate(&ws(&encoded("good"))), Err("missing additional subprotocol".into()));
    assert_eq!(auth.authenticate(&ws(&format!("{}, x", encoded("bad")))), Err("invalid bearer token".into()));
    assert_eq!(
        auth.authenticate(&ws("base64url.bearer.authorization.k8s.io.!!!, x")),
        Err("invalid base64.bearer.authorization token encoding".into())
    );
}

/// A CA (generated into `dir`) and a client certificate it signs.
fn ca_and_client(dir: &Path, cn: &str, o: &str) -> (ClientCa, String) {
    let files = crate::transport::tls::generate(dir, &[]).unwrap();
    let (cert, _key) = crate::transport::tls::client_certificate(&files.ca_cert, &files.ca_key, cn, o).unwrap();
    (ClientCa::load(&files.ca_cert).unwrap(), cert)
}

#[test]
fn client_certificates_name_user_and_group() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert) = ca_and_client(dir.path(), "listwatch-admin", "system:masters");
    let auth = Authentication { client_ca: Some(Arc::new(ca)), anonymous: false, ..Default::default() };
    assert_eq!(
        auth.authenticate(&request("/api", &[], Some(&cert))),
        Ok(user("listwatch-admin", &["system:masters", ALL_AUTHENTICATED]))
    );
}

#[test]
fn certificates_from_another_ca_are_refused_unless_a_token_authenticates() {
    let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (ca, _) = ca_and_client(ours.path(), "me", "g");
    let (_, foreign) = ca_and_client(theirs.path(), "intruder", "system:masters");
    let auth = Authentication { client_ca: Some(Arc::new(ca)), tokens: tokens(), ..Default::default() };
    let refused = auth.authenticate(&request("/api", &[], Some(&foreign))).unwrap_err();
    assert!(refused.starts_with("verifying certificate SN="), "{refused}");
    let with_token = auth.authenticate(&request("/api", &[("Authorization", "Bearer good")], Some(&foreign)));
    assert_eq!(with_token.unwrap().name, "alice");
}

#[test]
fn certificates_without_the_client_auth_usage_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, _) = ca_and_client(dir.path(), "me", "g");
    // The server certificate: same CA, but only the server-auth key usage.
    let server_cert = std::fs::read_to_string(dir.path().join("server.crt")).unwrap();
    let auth = Authentication { client_ca: Some(Arc::new(ca)), ..Default::default() };
    assert!(auth.authenticate(&request("/api", &[], Some(&server_cert))).is_err());
}

#[test]
fn an_empty_common_name_authenticates_nobody() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert) = ca_and_client(dir.path(), "", "g");
    let auth = Authentication { client_ca: Some(Arc::new(ca)), ..Default::default() };
    assert_eq!(auth.authenticate(&request("/api", &[], Some(&cert))), Ok(UserInfo::anonymous()));
}

#[test]
fn unauthorized_is_kubes_status() {
    let status = unauthorized();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&status.status().to_json()).unwrap(),
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
}
