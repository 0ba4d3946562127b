//! One `GET /readyz` against a server's URL, over plain HTTP or TLS, with nothing but a socket
//! (the harness must not depend on the HTTP clients that the tests exercise), and the wait for a
//! server the harness did not start.
//!
//! A server started with `--tls-generate` presents a certificate of its own CA; the probe only
//! asks whether it is ready, so it accepts any certificate (the handshake's signatures are still
//! checked: listwatch-gocompat's `InsecureSkipVerify`, which the client uses too).

use std::sync::Arc;
use std::time::Duration;

use listwatch_gocompat::tls::AcceptAnyCertificate;
use rustls::ClientConfig;
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one probe may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether the server at `url` (`http://host:port` or `https://host:port`) answers `/readyz`
/// with 200.
pub(crate) async fn is_ready(url: &str) -> bool {
    tokio::time::timeout(PROBE_TIMEOUT, probe(url)).await.unwrap_or(false)
}

/// Probes `url` every `poll_interval` until it is ready or `timeout` has passed: for a server
/// the harness did not start (the bench's `--server`). Whether it became ready.
pub async fn wait_until_ready(url: &str, timeout: Duration, poll_interval: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if is_ready(url).await {
            return true;
        }
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(poll_interval).await;
    }
}

async fn probe(url: &str) -> bool {
    let (tls, authority) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
        (Some(authority), _) => (false, authority),
        (_, Some(authority)) => (true, authority),
        _ => return false,
    };
    let authority = authority.trim_end_matches('/');
    let Ok(tcp) = TcpStream::connect(authority).await else { return false };
    if !tls {
        return status_is_200(tcp, authority).await;
    }
    let Some(name) = server_name(authority) else { return false };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(accept_any_certificate()));
    match connector.connect(name, tcp).await {
        Ok(stream) => status_is_200(stream, authority).await,
        Err(_) => false,
    }
}

/// Sends the request and reads as far as the status line.
async fn status_is_200(mut stream: impl AsyncRead + AsyncWrite + Unpin, authority: &str) -> bool {
    let request = format!("GET /readyz HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    while !answer.windows(2).any(|w| w == b"\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    answer.starts_with(b"HTTP/1.1 200 ")
}

/// The TLS server name of `host:port` (an IP address, bracketed for IPv6, or a DNS name).
fn server_name(authority: &str) -> Option<ServerName<'static>> {
    let host = authority.rsplit_once(':').map_or(authority, |(host, _)| host);
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).ok()
}

fn accept_any_certificate() -> ClientConfig {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = AcceptAnyCertificate::for_provider(&provider);
    ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names() {
        assert!(matches!(server_name("127.0.0.1:6443"), Some(ServerName::IpAddress(_))));
        assert!(matches!(server_name("[::1]:6443"), Some(ServerName::IpAddress(_))));
        assert!(matches!(server_name("localhost:6443"), Some(ServerName::DnsName(_))));
    }

    #[tokio::test]
    async fn a_200_is_ready_and_anything_else_is_not() {
        use tokio::net::TcpListener;
        for (answer, ready) in [("HTTP/1.1 200 OK\r\n\r\nok", true), ("HTTP/1.1 500 Internal\r\n\r\nno", false)] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let server = tokio::spawn(async move {
                let (mut stream, _) = listener.accept().await.unwrap();
                let mut request = [0u8; 1024];
                let n = stream.read(&mut request).await.unwrap();
                assert!(request[..n].starts_with(b"GET /readyz HTTP/1.1\r\n"));
                stream.write_all(answer.as_bytes()).await.unwrap();
            });
            assert_eq!(is_ready(&url).await, ready, "{answer}");
            server.await.unwrap();
        }
        assert!(!is_ready("http://127.0.0.1:1").await, "nothing listens on port 1");
    }
}
