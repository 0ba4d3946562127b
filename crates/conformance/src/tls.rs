//! How the tool checks an `https://` server: with the client crate's rustls configuration, so it
//! trusts what listwatch's client (and client-go) trusts: the CA given with
//! `--certificate-authority`, else the kubeconfig's CA alone, else the public roots; it presents
//! the kubeconfig's client certificate, or an exec plugin's.
//!
//! Verification is on unless `--insecure-skip-tls-verify` turns it off: a conformance verdict on
//! a server whose identity was not checked is a verdict on whoever answered. A kubeconfig's own
//! `insecure-skip-tls-verify: true` is therefore not taken as that consent; the description of
//! the TLS setup says so.

use std::sync::Arc;

use listwatch_client::{ExecProvider, TlsSettings};

use crate::target::TargetError;

/// What the command line says about TLS.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// A PEM CA bundle to trust instead of the kubeconfig's CA or the public roots.
    pub certificate_authority: Option<Vec<u8>>,
    /// Accept any server certificate.
    pub insecure_skip_tls_verify: bool,
}

/// The TLS setup of an https target.
#[derive(Clone, Debug)]
pub(crate) struct Tls {
    /// Without ALPN protocols: each use offers its own (h2 and HTTP/1.1 for requests, HTTP/1.1
    /// only for WebSocket upgrades).
    pub config: Arc<rustls::ClientConfig>,
    /// What is verified against what, for people.
    pub description: String,
}

impl Tls {
    /// The configuration offering `protocols` by ALPN.
    pub fn offering(&self, protocols: &[&[u8]]) -> rustls::ClientConfig {
        let mut config = (*self.config).clone();
        config.alpn_protocols = protocols.iter().map(|p| p.to_vec()).collect();
        config
    }
}

/// The TLS setup for a kubeconfig's `settings` (empty without a kubeconfig) and the command
/// line's `options`.
pub(crate) fn configure(
    settings: &TlsSettings,
    options: &TlsOptions,
    exec: Option<Arc<ExecProvider>>,
) -> Result<Tls, TargetError> {
    if options.insecure_skip_tls_verify && options.certificate_authority.is_some() {
        return Err(TargetError::Tls(
            "--certificate-authority and --insecure-skip-tls-verify contradict each other; give one".into(),
        ));
    }
    let (ca_pem, mut description) = match (&options.certificate_authority, &settings.ca_pem) {
        _ if options.insecure_skip_tls_verify => {
            (None, "TLS: the server's certificate is NOT verified (--insecure-skip-tls-verify)".to_string())
        }
        (Some(ca), _) => {
            (Some(ca.clone()), "TLS: verifying the server's certificate against --certificate-authority".into())
        }
        (None, Some(ca)) => {
            (Some(ca.clone()), "TLS: verifying the server's certificate against the kubeconfig's CA".into())
        }
        (None, None) => (None, "TLS: verifying the server's certificate against the public roots".into()),
    };
    if settings.insecure_skip_verify && !options.insecure_skip_tls_verify {
        description.push_str(
            " (the kubeconfig's insecure-skip-tls-verify is not followed; pass --insecure-skip-tls-verify to skip verification)",
        );
    }
    if let Some(name) = &settings.server_name {
        description.push_str(&format!(
            " (the kubeconfig's tls-server-name {name:?} is not used: the certificate must name the URL's host)"
        ));
    }
    let effective = TlsSettings {
        ca_pem,
        client_cert_pem: settings.client_cert_pem.clone(),
        client_key_pem: settings.client_key_pem.clone(),
        insecure_skip_verify: options.insecure_skip_tls_verify,
        server_name: None,
    };
    let config =
        listwatch_client::rustls_client_config(&effective, exec).map_err(|e| TargetError::Tls(e.to_string()))?;
    Ok(Tls { config: Arc::new(config), description })
}
