//! TLS: against listwatch serving HTTPS with its generated CA (HTTP/2 and HTTP/1.1 by ALPN, and
//! WebSocket over TLS), and client certificates through a TLS proxy that requires them.

mod support;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use futures::StreamExt;
use listwatch_client::{
    Client, Config, DynamicObject, HttpVersion, ListParams, Object, TlsSettings, WatchEvent, WatchParams,
    WatchTransport,
};
use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
use support::{Backend, Server, WAIT, configmap, configmaps};
use tokio::net::{TcpListener, TcpStream};

/// Creates an object and sees it through a list and a watch made with `client`.
async fn round_trip(client: &Client, transport: WatchTransport, name: &str) {
    let api = configmaps(client, "default").with_watch_transport(transport);
    let start = api.list(&ListParams::default()).await.unwrap_or_else(|e| panic!("{name}: list: {e}"));
    let params = WatchParams { timeout: Some(Duration::from_secs(30)), ..WatchParams::default() }
        .at(&start.metadata.resource_version);
    let mut events = api.watch(&params).await.unwrap_or_else(|e| panic!("{name}: watch: {e}"));
    let created: DynamicObject = api.create(&configmap(name, "1")).await.unwrap();
    loop {
        match tokio::time::timeout(WAIT, events.next()).await.expect("an event in time").expect("open").unwrap() {
            WatchEvent::Added(object) if object.name() == name => {
                assert_eq!(object.resource_version(), created.resource_version());
                return;
            }
            WatchEvent::Bookmark(_) | WatchEvent::Added(_) => {}
            other => panic!("{name}: unexpected {other:?}"),
        }
    }
}

#[tokio::test]
async fn https_with_the_servers_generated_ca() {
    let server = Server::start("tls", Backend::Memory, &["--tls-generate"]).await;
    let config = server.config();
    assert!(config.server.starts_with("https://"), "{}", config.server);
    assert!(config.tls.ca_pem.is_some(), "the kubeconfig names the CA file");

    for (i, version) in [HttpVersion::Auto, HttpVersion::Http1Only, HttpVersion::Http2Only].into_iter().enumerate() {
        let client = Client::new(Config { http_version: version, ..config.clone() }).unwrap();
        round_trip(&client, WatchTransport::Http, &format!("http-{i}")).await;
        round_trip(&client, WatchTransport::WebSocket, &format!("ws-{i}")).await;
    }

    let insecure = Config {
        tls: TlsSettings { ca_pem: None, insecure_skip_verify: true, ..TlsSettings::default() },
        ..config.clone()
    };
    round_trip(&Client::new(insecure).unwrap(), WatchTransport::Http, "insecure").await;

    // The certificate names localhost too; any other name is refused.
    let by_name =
        Config { tls: TlsSettings { server_name: Some("localhost".into()), ..config.tls.clone() }, ..config.clone() };
    round_trip(&Client::new(by_name).unwrap(), WatchTransport::Http, "by-name").await;
    let wrong_name = Config {
        tls: TlsSettings { server_name: Some("wrong.example".into()), ..config.tls.clone() },
        ..config.clone()
    };
    let err = configmaps(&Client::new(wrong_name).unwrap(), "default").list(&ListParams::default()).await.unwrap_err();
    assert!(err.status().is_none(), "a TLS failure, not a server answer: {err}");

    // Without the CA the public roots do not trust the generated certificate.
    let untrusted = Config { tls: TlsSettings::default(), ..config.clone() };
    let err = configmaps(&Client::new(untrusted).unwrap(), "default").list(&ListParams::default()).await.unwrap_err();
    assert!(format!("{err:?}").contains("UnknownIssuer"), "{err:?}");
}

struct Pki {
    ca_pem: String,
    server_cert: rustls::pki_types::CertificateDer<'static>,
    server_key: PrivateKeyDer<'static>,
    client_cert_pem: String,
    client_key_pem: String,
}

fn pki() -> Pki {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, "test CA");
    ca_params.key_usages =
        vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign, KeyUsagePurpose::DigitalSignature];
    let ca = CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();

    let server_key = KeyPair::generate().unwrap();
    let server_params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let server_cert = server_params.signed_by(&server_key, &ca).unwrap();

    let client_key = KeyPair::generate().unwrap();
    let mut client_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    client_params.distinguished_name.push(DnType::CommonName, "tester");
    client_params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_cert = client_params.signed_by(&client_key, &ca).unwrap();

    Pki {
        ca_pem: ca.pem(),
        server_cert: server_cert.der().clone(),
        server_key: PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
        client_cert_pem: client_cert.pem(),
        client_key_pem: client_key.serialize_pem(),
    }
}

/// A TLS front for `upstream` (plain HTTP) that requires a client certificate from `ca_pem`.
async fn mutual_tls_proxy(pki: &Pki, upstream: String) -> String {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::pem::PemObject::pem_slice_iter(pki.ca_pem.as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone()).build().unwrap();
    let mut server_config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(vec![pki.server_cert.clone()], pki.server_key.clone_key())
        .unwrap();
    server_config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server_config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let acceptor = acceptor.clone();
            let upstream = upstream.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else { return };
                let Ok(mut plain) = TcpStream::connect(&upstream).await else { return };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    format!("https://{address}")
}

#[tokio::test]
async fn client_certificates_from_kubeconfig_data() {
    let server = Server::start("mtls", Backend::Memory, &[]).await;
    let pki = pki();
    let url = mutual_tls_proxy(&pki, server.url.trim_start_matches("http://").to_owned()).await;
    let b64 = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let kubeconfig = server.dir.path().join("mtls-kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: mtls\nclusters:\n- name: mtls\n  cluster:\n    server: {url}\n    certificate-authority-data: {}\ncontexts:\n- name: mtls\n  context: {{cluster: mtls, user: me}}\nusers:\n- name: me\n  user:\n    client-certificate-data: {}\n    client-key-data: {}\n",
            b64(&pki.ca_pem),
            b64(&pki.client_cert_pem),
            b64(&pki.client_key_pem),
        ),
    )
    .unwrap();
    let config = Config::from_kubeconfig(&kubeconfig).unwrap();
    let client = Client::new(config.clone()).unwrap();
    round_trip(&client, WatchTransport::Http, "with-cert").await;
    round_trip(&client, WatchTransport::WebSocket, "with-cert-ws").await;

    let anonymous = Config {
        tls: TlsSettings { client_cert_pem: None, client_key_pem: None, ..config.tls.clone() },
        ..config.clone()
    };
    let err = configmaps(&Client::new(anonymous).unwrap(), "default").list(&ListParams::default()).await.unwrap_err();
    assert!(err.status().is_none(), "refused in the handshake: {err}");

    let half = Config { tls: TlsSettings { client_key_pem: None, ..config.tls.clone() }, ..config };
    assert!(Client::new(half).is_err(), "a certificate without its key is a configuration error");
}
