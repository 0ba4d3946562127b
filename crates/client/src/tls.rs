//! The rustls client configuration a [`TlsSettings`] describes.
//!
//! ring is the crypto provider (it builds with a C compiler only, unlike aws-lc-rs which needs
//! cmake). Trust roots follow client-go: the kubeconfig's CA bundle alone when one is given,
//! otherwise well-known public roots. `insecure-skip-tls-verify` installs a verifier that accepts
//! any certificate but still checks the handshake signatures, as Go's `InsecureSkipVerify` does
//! (listwatch-gocompat's `tls`), so the session keys are at least bound to the certificate the
//! server presented.
//!
//! Without a client certificate in the kubeconfig, an exec credential plugin may provide one: the
//! handshake then presents the one the plugin last returned (requests run the plugin, when its
//! credentials expired, before they connect).

use std::sync::Arc;

use listwatch_gocompat::tls::AcceptAnyCertificate;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, SignatureScheme};

use crate::config::TlsSettings;
use crate::error::Error;
use crate::exec::ExecProvider;

/// The rustls configuration for `settings` (no ALPN protocols: the caller offers its own),
/// presenting `exec`'s client certificate when the settings have none. Public so that other HTTP
/// stacks (the conformance tool's) check servers exactly as this client does.
pub fn client_config(settings: &TlsSettings, exec: Option<Arc<ExecProvider>>) -> Result<ClientConfig, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?;
    let builder = if settings.insecure_skip_verify {
        builder.dangerous().with_custom_certificate_verifier(AcceptAnyCertificate::for_provider(&provider))
    } else {
        let mut roots = RootCertStore::empty();
        match &settings.ca_pem {
            Some(pem) => {
                let mut count = 0;
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| Error::Tls(format!("reading the CA bundle: {e}")))?;
                    roots.add(cert).map_err(|e| Error::Tls(format!("adding a CA certificate: {e}")))?;
                    count += 1;
                }
                if count == 0 {
                    return Err(Error::Tls("the CA bundle holds no PEM certificate".into()));
                }
            }
            None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
        }
        builder.with_root_certificates(roots)
    };
    match (&settings.client_cert_pem, &settings.client_key_pem) {
        (Some(cert), Some(key)) => {
            let chain = CertificateDer::pem_slice_iter(cert)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Error::Tls(format!("reading the client certificate: {e}")))?;
            let key =
                PrivateKeyDer::from_pem_slice(key).map_err(|e| Error::Tls(format!("reading the client key: {e}")))?;
            builder.with_client_auth_cert(chain, key).map_err(|e| Error::Tls(format!("client certificate: {e}")))
        }
        (None, None) => Ok(match exec {
            Some(provider) => builder.with_client_cert_resolver(Arc::new(ExecClientCertificate(provider))),
            None => builder.with_no_client_auth(),
        }),
        _ => Err(Error::Tls("a client certificate needs both the certificate and its key".into())),
    }
}

/// The server name to verify against, when the kubeconfig overrides it.
pub(crate) fn server_name_override(settings: &TlsSettings) -> Result<Option<ServerName<'static>>, Error> {
    settings
        .server_name
        .as_ref()
        .map(|name| {
            ServerName::try_from(name.clone()).map_err(|e| Error::Tls(format!("tls-server-name {name:?}: {e}")))
        })
        .transpose()
}

/// The client certificate an exec plugin last returned, if it returned one.
#[derive(Debug)]
struct ExecClientCertificate(Arc<ExecProvider>);

impl rustls::client::ResolvesClientCert for ExecClientCertificate {
    fn resolve(&self, _root_hints: &[&[u8]], _schemes: &[SignatureScheme]) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.0.kept()?.certified_key.clone()
    }

    fn has_certs(&self) -> bool {
        self.0.kept().is_some_and(|credentials| credentials.certified_key.is_some())
    }
}
