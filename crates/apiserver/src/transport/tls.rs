//! TLS for the API server: HTTP/1.1 and HTTP/2 over TLS with ALPN (`h2`, `http/1.1`), so many
//! watches share one connection as client-go does.
//!
//! Certificates come from `--tls-cert-file` / `--tls-private-key-file`, or are generated: a
//! small CA and a server certificate it signs (for `localhost`, `127.0.0.1`, `::1` and the
//! listen address), written next to each other so the kubeconfig can name the CA. The CA's key
//! is kept too, so it can sign client certificates for the kubeconfig's user
//! ([`client_certificate`]) when it also authenticates clients.
//!
//! With a client CA ([`ClientCa`]) the server asks for client certificates without requiring
//! them, so token and anonymous requests still work over TLS; the authenticator judges them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

use crate::authn::ClientCa;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be read.
    #[error("reading {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A PEM file holds no certificate (or no key).
    #[error("{path} holds no {what}")]
    Missing {
        /// The file.
        path: PathBuf,
        /// What it lacks.
        what: &'static str,
    },
    /// rcgen could not make a certificate.
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the certificates or keys.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// A generated file could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Files a generated pair lives in.
pub struct GeneratedFiles {
    /// The CA's certificate (what clients trust, kubeconfig's `certificate-authority`).
    pub ca_cert: PathBuf,
    /// The CA's key (kept so client certificates can be signed later).
    pub ca_key: PathBuf,
    /// The server's certificate.
    pub cert: PathBuf,
    /// The server's key.
    pub key: PathBuf,
}

/// Generates a CA and a server certificate signed by it into `dir` (kept if already there).
pub fn generate(dir: &Path, extra_names: &[String]) -> Result<GeneratedFiles, TlsError> {
    let files = GeneratedFiles {
        ca_cert: dir.join("ca.crt"),
        ca_key: dir.join("ca.key"),
        cert: dir.join("server.crt"),
        key: dir.join("server.key"),
    };
    if [&files.ca_cert, &files.ca_key, &files.cert, &files.key].iter().all(|f| f.exists()) {
        return Ok(files);
    }
    std::fs::create_dir_all(dir).map_err(|source| TlsError::Write { path: dir.to_path_buf(), source })?;
    let ca_key = rcgen::KeyPair::generate()?;
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, "listwatch-ca");
    ca_params.key_usages = vec![rcgen::KeyUsagePurpose::KeyCertSign, rcgen::KeyUsagePurpose::CrlSign];
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    names.extend(extra_names.iter().cloned());
    names.dedup();
    let server_key = rcgen::KeyPair::generate()?;
    let mut server_params = rcgen::CertificateParams::new(names)?;
    server_params.distinguished_name.push(rcgen::DnType::CommonName, "listwatch");
    server_params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let server_cert = server_params.signed_by(&server_key, &issuer)?;
    write(&files.ca_cert, ca_cert.pem(), false)?;
    write(&files.ca_key, ca_key.serialize_pem(), true)?;
    write(&files.cert, server_cert.pem(), false)?;
    write(&files.key, server_key.serialize_pem(), true)?;
    Ok(files)
}

/// Writes `text` to `path`; private keys readable by their owner only.
fn write(path: &Path, text: String, private: bool) -> Result<(), TlsError> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if private {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    #[cfg(not(unix))]
    let _ = private;
    let result = options.open(path).and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()));
    result.map_err(|source| TlsError::Write { path: path.to_path_buf(), source })
}

/// A client certificate and its key (PEM) for user `common_name` in group `organization`
/// (kube's x509 authenticator reads CN and O; rcgen writes one O), signed by the CA in
/// `ca_cert` / `ca_key` (PEM).
pub fn client_certificate(
    ca_cert: &Path,
    ca_key: &Path,
    common_name: &str,
    organization: &str,
) -> Result<(String, String), TlsError> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source })
    };
    let ca_key = rcgen::KeyPair::from_pem(&read(ca_key)?)?;
    let issuer = rcgen::Issuer::from_ca_cert_pem(&read(ca_cert)?, ca_key)?;
    let key = rcgen::KeyPair::generate()?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params.distinguished_name.push(rcgen::DnType::CommonName, common_name);
    params.distinguished_name.push(rcgen::DnType::OrganizationName, organization);
    params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature, rcgen::KeyUsagePurpose::KeyEncipherment];
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let cert = params.signed_by(&key, &issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A rustls server configuration from PEM files, offering HTTP/2 and HTTP/1.1 by ALPN; with
/// `client_ca`, asking clients for a certificate (optional).
pub fn server_config(cert: &Path, key: &Path, client_ca: Option<&ClientCa>) -> Result<Arc<ServerConfig>, TlsError> {
    let read = |path: &Path| std::fs::read(path).map_err(|source| TlsError::Read { path: path.to_path_buf(), source });
    let cert_pem = read(cert)?;
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&cert_pem).filter_map(Result::ok).collect();
    if certs.is_empty() {
        return Err(TlsError::Missing { path: cert.to_path_buf(), what: "certificate" });
    }
    let key_pem = read(key)?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|_| TlsError::Missing { path: key.to_path_buf(), what: "private key" })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider).with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        Some(ca) => builder.with_client_cert_verifier(ca.handshake_verifier()),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}
