//! `crypto/tls`'s `InsecureSkipVerify` as a rustls certificate verifier: what client-go does with
//! a kubeconfig's `insecure-skip-tls-verify`, and what the test harness's readiness probe needs
//! for a server with a certificate of its own CA.
//!
//! Like Go, it accepts any certificate chain for any name but still checks the handshake's
//! signatures, so the session keys are at least bound to the certificate the server presented.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};

/// A verifier that accepts any server certificate and checks handshake signatures with the
/// algorithms it was given (a crypto provider's `signature_verification_algorithms`).
#[derive(Debug)]
pub struct AcceptAnyCertificate(pub WebPkiSupportedAlgorithms);

impl AcceptAnyCertificate {
    /// The verifier for `provider`'s signature algorithms, ready for
    /// `ClientConfig::builder().dangerous().with_custom_certificate_verifier`.
    pub fn for_provider(provider: &CryptoProvider) -> Arc<AcceptAnyCertificate> {
        Arc::new(AcceptAnyCertificate(provider.signature_verification_algorithms))
    }
}

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_certificate_for_any_name_is_accepted() {
        let provider = rustls::crypto::ring::default_provider();
        let verifier = AcceptAnyCertificate::for_provider(&provider);
        let name = ServerName::try_from("example.com").unwrap();
        let garbage = CertificateDer::from(vec![1, 2, 3]);
        assert!(verifier.verify_server_cert(&garbage, &[], &name, &[], UnixTime::now()).is_ok());
        assert_eq!(verifier.supported_verify_schemes(), provider.signature_verification_algorithms.supported_schemes());
    }
}
