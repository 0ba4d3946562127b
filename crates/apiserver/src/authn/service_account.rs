//! Service account tokens (kube's `serviceaccount` token generator and authenticator): signed
//! JWTs that name a ServiceAccount, handed out by the TokenRequest subresource (`kubectl create
//! token NAME`) and authenticated as `system:serviceaccount:<namespace>:<name>` in the groups
//! `system:serviceaccounts` and `system:serviceaccounts:<namespace>`.
//!
//! Tokens are ES256 (ECDSA P-256) JWTs; kube's are RS256 unless given an EC key, and clients
//! treat them as opaque either way. The signing key is generated when the server starts, or
//! read (PKCS#8 PEM) from `--service-account-signing-key-file`; `--service-account-key-file`
//! adds public keys (PEM SPKI) whose tokens are accepted too. A token is valid for its
//! issuer and audiences, between `nbf` and `exp`; that its account still exists with the same
//! uid is checked by the caller, which can read the store ([`Claims`]).

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use ring::rand::SystemRandom;
use ring::signature::{self, ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{PrivatePkcs8KeyDer, SubjectPublicKeyInfoDer};
use serde::{Deserialize, Serialize};

use super::UserInfo;

/// kube-apiserver's default `--service-account-issuer` for local clusters.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The DER prefix of a P-256 SubjectPublicKeyInfo, before the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Issues and checks service account tokens.
pub struct ServiceAccountTokens {
    signer: EcdsaKeyPair,
    key_id: String,
    /// Uncompressed P-256 points whose signatures are accepted (the signer's first).
    verifiers: Vec<Vec<u8>>,
    issuer: String,
    rng: SystemRandom,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens").field("issuer", &self.issuer).field("key_id", &self.key_id).finish()
    }
}

/// What a token names (kube's private claims, `kubernetes.io`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The account's namespace.
    pub namespace: String,
    /// The account's name.
    pub name: String,
    /// The account's uid when the token was issued.
    pub uid: String,
}

#[derive(Serialize, Deserialize)]
struct Jwt {
    aud: Vec<String>,
    exp: i64,
    iat: i64,
    iss: String,
    jti: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: KubernetesClaims,
    nbf: i64,
    sub: String,
}

#[derive(Serialize, Deserialize)]
struct KubernetesClaims {
    namespace: String,
    serviceaccount: AccountRef,
}

#[derive(Serialize, Deserialize)]
struct AccountRef {
    name: String,
    uid: String,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl ServiceAccountTokens {
    /// A new signing key (the default: tokens do not outlive the server's key).
    pub fn generate() -> ServiceAccountTokens {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a P-256 key");
        Self::from_pkcs8(pkcs8.as_ref(), rng).expect("a generated key loads")
    }

    /// The signing key in `signing_key` (PKCS#8 PEM, P-256), and the public keys in
    /// `verify_keys` (PEM SPKI) accepted besides it.
    pub fn load(signing_key: Option<&Path>, verify_keys: &[&Path]) -> Result<ServiceAccountTokens, String> {
        let mut tokens = match signing_key {
            None => Self::generate(),
            Some(path) => {
                let key = PrivatePkcs8KeyDer::from_pem_file(path)
                    .map_err(|e| format!("{}: not a PKCS#8 private key: {e}", path.display()))?;
                Self::from_pkcs8(key.secret_pkcs8_der(), SystemRandom::new())
                    .map_err(|e| format!("{}: {e} (listwatch signs with ECDSA P-256 keys)", path.display()))?
            }
        };
        for path in verify_keys {
            let key = SubjectPublicKeyInfoDer::from_pem_file(path)
                .map_err(|e| format!("{}: not a PEM public key: {e}", path.display()))?;
            let der: &[u8] = key.as_ref();
            match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
                Some(point) if point.len() == 65 => tokens.verifiers.push(point.to_vec()),
                _ => return Err(format!("{}: listwatch verifies ECDSA P-256 public keys only", path.display())),
            }
        }
        Ok(tokens)
    }

    fn from_pkcs8(pkcs8: &[u8], rng: SystemRandom) -> Result<ServiceAccountTokens, String> {
        let signer =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8, &rng).map_err(|e| e.to_string())?;
        let point = signer.public_key().as_ref().to_vec();
        // kube's key id: the base64url SHA-256 of the public key's DER.
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(&point);
        let key_id = b64(ring::digest::digest(&ring::digest::SHA256, &spki).as_ref());
        Ok(ServiceAccountTokens { signer, key_id, verifiers: vec![point], issuer: DEFAULT_ISSUER.into(), rng })
    }

    /// The issuer tokens name and must name.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// A token for the account, valid for `audiences` (the issuer's when empty) for
    /// `seconds`; with its expiry (Unix seconds).
    pub fn issue(&self, account: &Claims, audiences: &[String], seconds: i64) -> (String, i64) {
        let now = now();
        let audiences = if audiences.is_empty() { vec![self.issuer.clone()] } else { audiences.to_vec() };
        let claims = Jwt {
            aud: audiences,
            exp: now + seconds,
            iat: now,
            iss: self.issuer.clone(),
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubernetesClaims {
                namespace: account.namespace.clone(),
                serviceaccount: AccountRef { name: account.name.clone(), uid: account.uid.clone() },
            },
            nbf: now,
            sub: format!("system:serviceaccount:{}:{}", account.namespace, account.name),
        };
        let header = serde_json::json!({"alg": "ES256", "kid": self.key_id});
        let signed = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(&serde_json::to_vec(&claims).expect("claims serialize"))
        );
        let signature = self.signer.sign(&self.rng, signed.as_bytes()).expect("signing with a loaded key");
        (format!("{signed}.{}", b64(signature.as_ref())), claims.exp)
    }

    /// The user a token authenticates as, with the account it names, for `audiences` (the
    /// issuer's when empty): `None` when it is not one of ours (another authenticator may
    /// know it), `Err` when it is ours but invalid.
    pub fn authenticate(&self, token: &str, audiences: &[String]) -> Option<Result<(UserInfo, Claims), String>> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return None;
        };
        let decode = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).ok();
        let claims: Jwt = decode(payload).and_then(|p| serde_json::from_slice(&p).ok())?;
        if claims.iss != self.issuer {
            return None;
        }
        let signature = decode(signature)?;
        let signed = &token[..header.len() + 1 + payload.len()];
        let verified = self.verifiers.iter().any(|point| {
            signature::UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
                .verify(signed.as_bytes(), &signature)
                .is_ok()
        });
        if !verified {
            return Some(Err("invalid signature".into()));
        }
        let now = now();
        if now >= claims.exp {
            return Some(Err("service account token has expired".into()));
        }
        if now < claims.nbf {
            return Some(Err("service account token is not valid yet".into()));
        }
        let wanted: Vec<String> = if audiences.is_empty() { vec![self.issuer.clone()] } else { audiences.to_vec() };
        if !claims.aud.iter().any(|a| wanted.contains(a)) {
            return Some(Err("token audiences do not match".into()));
        }
        let account = Claims {
            namespace: claims.kubernetes.namespace,
            name: claims.kubernetes.serviceaccount.name,
            uid: claims.kubernetes.serviceaccount.uid,
        };
        let mut user = UserInfo {
            name: format!("system:serviceaccount:{}:{}", account.namespace, account.name),
            uid: account.uid.clone(),
            groups: vec!["system:serviceaccounts".into(), format!("system:serviceaccounts:{}", account.namespace)],
            ..UserInfo::default()
        };
        user.extra.insert("authentication.kubernetes.io/credential-id".into(), vec![format!("JTI={}", claims.jti)]);
        Some(Ok((user, account)))
    }
}

/// `system:serviceaccount:<namespace>:<name>` split (kube's `serviceaccount.SplitUsername`).
pub fn split_username(user: &str) -> Option<(String, String)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (namespace, name) = rest.split_once(':')?;
    (!namespace.is_empty() && !name.is_empty() && !name.contains(':')).then(|| (namespace.into(), name.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account() -> Claims {
        Claims { namespace: "team".into(), name: "ctl".into(), uid: "u-1".into() }
    }

    #[test]
    fn issued_tokens_authenticate_as_their_account() {
        let tokens = ServiceAccountTokens::generate();
        let (token, expiry) = tokens.issue(&account(), &[], 3600);
        assert!(expiry > now());
        let (user, claims) = tokens.authenticate(&token, &[]).unwrap().unwrap();
        assert_eq!(user.name, "system:serviceaccount:team:ctl");
        assert_eq!(user.groups, ["system:serviceaccounts", "system:serviceaccounts:team"]);
        assert_eq!(claims, account());
    }

    #[test]
    fn tampered_expired_foreign_and_wrong_audience_tokens_are_refused() {
        let tokens = ServiceAccountTokens::generate();
        let (token, _) = tokens.issue(&account(), &[], 3600);
        let mut parts: Vec<String> = token.split('.').map(String::from).collect();
        let mut claims: serde_json::Value =
            serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(&parts[1]).unwrap())
                .unwrap();
        claims["kubernetes.io"]["namespace"] = "kube-system".into();
        parts[1] = b64(claims.to_string().as_bytes());
        assert_eq!(tokens.authenticate(&parts.join("."), &[]).unwrap().unwrap_err(), "invalid signature");
        let (expired, _) = tokens.issue(&account(), &[], -1);
        assert!(tokens.authenticate(&expired, &[]).unwrap().is_err());
        let other = ServiceAccountTokens::generate();
        assert!(other.authenticate(&token, &[]).unwrap().is_err(), "another server's key");
        let (scoped, _) = tokens.issue(&account(), &["vault".into()], 3600);
        assert!(tokens.authenticate(&scoped, &[]).unwrap().is_err());
        assert!(tokens.authenticate("not-a-jwt", &[]).is_none());
    }
}
