//! `--client-ca-file`: x509 client certificates, as kube's x509 authenticator judges them.
//!
//! The TLS handshake asks for a certificate (naming the CA's subjects as hints) but neither
//! requires one nor refuses one from another CA: like Go's `tls.RequestClientCert`, which
//! kube-apiserver uses, it only checks that the client holds the certificate's key. Each
//! request then verifies the chain against the CA with the client-auth key usage; a
//! certificate that does not verify makes the request 401 (unless a valid token comes with
//! it), where a handshake error would leave clients with a TLS failure they cannot read.
//! A verified certificate is user `CN`, groups `O`; an empty CN authenticates nobody and the
//! request goes on to the other authenticators.

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme};

use super::UserInfo;

/// The CA bundle client certificates must chain to.
pub struct ClientCa {
    /// Verifies chains (webpki, client-auth usage); also holds the hint subjects.
    verifier: Arc<dyn ClientCertVerifier>,
}

impl std::fmt::Debug for ClientCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCa").field("subjects", &self.verifier.root_hint_subjects().len()).finish()
    }
}

impl ClientCa {
    /// Reads a PEM bundle of CA certificates.
    pub fn load(path: &Path) -> Result<ClientCa, String> {
        let pem = std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        ClientCa::from_pem(&pem).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The CA bundle of `--client-ca-file`, from its PEM text.
    pub fn from_pem(pem: &[u8]) -> Result<ClientCa, String> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(pem) {
            let cert = cert.map_err(|e| format!("reading a CA certificate: {e}"))?;
            roots.add(cert).map_err(|e| format!("adding a CA certificate: {e}"))?;
        }
        if roots.is_empty() {
            return Err("holds no PEM certificate".into());
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
            .allow_unauthenticated()
            .build()
            .map_err(|e| e.to_string())?;
        Ok(ClientCa { verifier })
    }

    /// What the TLS server uses: ask for a certificate, accept any (or none).
    pub fn handshake_verifier(&self) -> Arc<dyn ClientCertVerifier> {
        Arc::new(RequestClientCert(self.verifier.clone()))
    }

    /// The user a presented chain (end entity first) names: `Ok(None)` for an empty CN,
    /// `Err` (kube's log message) when the chain does not verify.
    pub fn authenticate(&self, chain: &[CertificateDer<'static>]) -> Result<Option<UserInfo>, String> {
        let Some((end_entity, intermediates)) = chain.split_first() else { return Ok(None) };
        let parsed = x509_parser::parse_x509_certificate(end_entity.as_ref()).map(|(_, cert)| cert);
        if let Err(e) = self.verifier.verify_client_cert(end_entity, intermediates, UnixTime::now()) {
            let identifier = parsed.as_ref().map_or_else(|_| "(unparsable)".to_string(), identifier);
            return Err(format!("verifying certificate {identifier} failed: {e}"));
        }
        let cert = parsed.map_err(|e| format!("parsing the client certificate: {e}"))?;
        let subject = cert.subject();
        // Go's pkix.Name keeps the last CN and every O, skipping values that are not strings.
        let name = subject.iter_common_name().filter_map(|a| a.as_str().ok()).last().unwrap_or("");
        if name.is_empty() {
            return Ok(None);
        }
        let groups = subject.iter_organization().filter_map(|a| a.as_str().ok()).map(String::from).collect();
        Ok(Some(UserInfo { name: name.to_string(), groups, ..UserInfo::default() }))
    }
}

/// `SN=<decimal>, SKID=AB:CD.., AKID=..`, as kube names a certificate in its log.
fn identifier(cert: &x509_parser::certificate::X509Certificate<'_>) -> String {
    use x509_parser::extensions::ParsedExtension;
    let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":");
    let (mut skid, mut akid) = (String::new(), String::new());
    for extension in cert.extensions() {
        match extension.parsed_extension() {
            ParsedExtension::SubjectKeyIdentifier(id) => skid = hex(id.0),
            ParsedExtension::AuthorityKeyIdentifier(aki) => {
                akid = aki.key_identifier.as_ref().map(|id| hex(id.0)).unwrap_or_default();
            }
            _ => {}
        }
    }
    format!("SN={}, SKID={skid}, AKID={akid}", cert.serial)
}

/// Go's `tls.RequestClientCert`: the CA's subjects as hints, any certificate accepted at the
/// handshake (its signatures are still checked, so the client holds the key).
#[derive(Debug)]
struct RequestClientCert(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}
