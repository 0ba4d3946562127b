//! What an exec plugin prints: an `ExecCredential` whose `status` holds a bearer token or a
//! client certificate and key, read strictly so a plugin that answers the wrong version or
//! nothing usable is an error that says so.

use std::sync::Arc;
use std::time::SystemTime;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::CertifiedKey;
use serde::Deserialize;

use crate::rfc3339;

/// Credentials an exec plugin returned.
#[derive(Clone)]
pub struct ExecCredentials {
    /// Sent as `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// PEM client certificate chain (`clientCertificateData`).
    pub client_certificate_pem: Option<Vec<u8>>,
    /// PEM private key of the certificate (`clientKeyData`).
    pub client_key_pem: Option<Vec<u8>>,
    /// When the plugin must run again (`expirationTimestamp`); `None`: only after a 401.
    pub expires_at: Option<SystemTime>,
    /// The certificate and key, ready for a TLS handshake.
    pub(crate) certified_key: Option<Arc<CertifiedKey>>,
}

impl std::fmt::Debug for ExecCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecCredentials")
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("client_certificate", &self.client_certificate_pem.is_some())
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ExecCredential {
    kind: Option<String>,
    api_version: Option<String>,
    status: Option<Status>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Status {
    expiration_timestamp: Option<String>,
    token: Option<String>,
    client_certificate_data: Option<String>,
    client_key_data: Option<String>,
}

/// Reads the plugin's stdout; `api_version` is the version it was asked to speak. The error says
/// what is wrong with the output.
pub(super) fn parse(stdout: &[u8], api_version: &str) -> Result<ExecCredentials, String> {
    let credential: ExecCredential =
        serde_json::from_slice(stdout).map_err(|e| format!("its output is not an ExecCredential: {e}"))?;
    if credential.kind.as_deref() != Some("ExecCredential") {
        return Err(format!("its output has kind {:?}, not ExecCredential", credential.kind.unwrap_or_default()));
    }
    let returned = credential.api_version.unwrap_or_default();
    if returned != api_version {
        return Err(format!("it is configured to use API version {api_version}, but returned version {returned:?}"));
    }
    let status = credential.status.ok_or("its ExecCredential has no status")?;
    let non_empty = |value: Option<String>| value.filter(|v| !v.is_empty());
    let token = non_empty(status.token);
    let certificate = non_empty(status.client_certificate_data).map(String::into_bytes);
    let key = non_empty(status.client_key_data).map(String::into_bytes);
    let certified_key = match (&certificate, &key) {
        (Some(certificate), Some(key)) => Some(certified_key(certificate, key)?),
        (None, None) if token.is_none() => {
            return Err("its ExecCredential has neither a token nor a client certificate and key".into());
        }
        (None, None) => None,
        _ => return Err("its ExecCredential has a client certificate or key, but not both".into()),
    };
    let expires_at = match non_empty(status.expiration_timestamp) {
        Some(text) => Some(
            rfc3339::parse(&text).ok_or_else(|| format!("its expirationTimestamp {text:?} is not an RFC 3339 time"))?,
        ),
        None => None,
    };
    Ok(ExecCredentials { token, client_certificate_pem: certificate, client_key_pem: key, expires_at, certified_key })
}

fn certified_key(certificate: &[u8], key: &[u8]) -> Result<Arc<CertifiedKey>, String> {
    let chain = CertificateDer::pem_slice_iter(certificate)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("its clientCertificateData is not PEM: {e}"))?;
    if chain.is_empty() {
        return Err("its clientCertificateData holds no certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| format!("its clientKeyData is not a PEM key: {e}"))?;
    let signing_key = rustls::crypto::ring::default_provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| format!("its clientKeyData cannot sign: {e}"))?;
    Ok(Arc::new(CertifiedKey::new(chain, signing_key)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: &str = "client.authentication.k8s.io/v1";

    #[test]
    fn a_token_with_an_expiry() {
        let out = br#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","spec":{},"status":{"token":"k8s-aws-v1.abc","expirationTimestamp":"2030-01-02T03:04:05Z"}}"#;
        let credentials = parse(out, V1).unwrap();
        assert_eq!(credentials.token.as_deref(), Some("k8s-aws-v1.abc"));
        assert_eq!(credentials.expires_at, rfc3339::parse("2030-01-02T03:04:05Z"));
        assert!(credentials.certified_key.is_none());
        assert!(!format!("{credentials:?}").contains("abc"), "the token is not printed");
    }

    #[test]
    fn output_that_says_nothing_usable_is_refused_with_the_reason() {
        let cases = [
            ("not json", "not an ExecCredential"),
            (r#"{"kind":"Pod","apiVersion":"v1"}"#, "kind \"Pod\""),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"t"}}"#,
                "configured to use API version client.authentication.k8s.io/v1, but returned version \"client.authentication.k8s.io/v1beta1\"",
            ),
            (r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1"}"#, "no status"),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":""}}"#,
                "neither a token nor",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"clientKeyData":"k"}}"#,
                "not both",
            ),
            (
                r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1","status":{"token":"t","expirationTimestamp":"tomorrow"}}"#,
                "not an RFC 3339 time",
            ),
        ];
        for (out, why) in cases {
            let error = parse(out.as_bytes(), V1).unwrap_err();
            assert!(error.contains(why), "{out}: {error}");
        }
    }
}
