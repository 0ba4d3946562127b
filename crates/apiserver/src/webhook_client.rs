//! One POST to a webhook over HTTPS (HTTP/1.1), as kube's webhook client makes it for
//! admission webhooks and CRD conversion webhooks alike: the
//! certificate checked against the configuration's `caBundle` (the system's roots when it has
//! none) and the host the webhook is known by (the URL's, or `NAME.NAMESPACE.svc` for a
//! Service), the timeout both enforced and sent as `?timeout=Ns`. Failures read as Go's HTTP
//! client words them (`Post "https://…": context deadline exceeded`), since they reach the
//! client inside kube's message.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig as TlsConfig, RootCertStore};
use serde::Deserialize;

use crate::faults::WebhookFailure;

/// How a webhook is reached.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientConfig {
    pub url: Option<String>,
    pub service: Option<ServiceReference>,
    /// Base64 of PEM certificates (JSON carries `[]byte` as base64).
    pub ca_bundle: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct ServiceReference {
    pub namespace: String,
    pub name: String,
    pub path: Option<String>,
    pub port: Option<u16>,
}

/// Where a Service a webhook names is reached (`serve --webhook-service NS/NAME=https://HOST:PORT`):
/// nothing runs in-cluster, so each Service a webhook names is mapped to an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceUrl {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// `host:port` to connect to.
    pub address: String,
}

impl std::str::FromStr for ServiceUrl {
    type Err = String;

    /// `NAMESPACE/NAME=https://HOST:PORT` (or `=HOST:PORT`).
    fn from_str(value: &str) -> Result<ServiceUrl, String> {
        let form = "expected NAMESPACE/NAME=https://HOST:PORT";
        let (service, target) = value.split_once('=').ok_or(form)?;
        let (namespace, name) = service.split_once('/').ok_or(form)?;
        let address = target.strip_prefix("https://").unwrap_or(target).trim_end_matches('/');
        if namespace.is_empty() || name.is_empty() || address.is_empty() || address.contains('/') {
            return Err(form.into());
        }
        Ok(ServiceUrl { namespace: namespace.into(), name: name.into(), address: address.into() })
    }
}

/// Where one call goes.
struct Target {
    /// The URL as kube shows it in errors, `?timeout=` included.
    shown: String,
    /// `host:port` to connect to.
    address: String,
    /// The name the certificate must hold.
    server_name: String,
    /// Path and query of the request.
    path_and_query: String,
}

fn target(config: &ClientConfig, timeout: Duration, services: &[ServiceUrl]) -> Result<Target, String> {
    let timeout = format!("timeout={}s", timeout.as_secs());
    if let Some(raw) = &config.url {
        let url =
            url::Url::parse(raw).map_err(|e| format!("parse {}: {e}", listwatch_meta::validation::go_quote(raw)))?;
        let host = url.host_str().unwrap_or_default().trim_matches(['[', ']']).to_string();
        let port = url.port().unwrap_or(443);
        let path = if url.path().is_empty() { "/" } else { url.path() };
        let path_and_query = format!("{path}?{timeout}");
        let authority = match url.port() {
            Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
            None => url.host_str().unwrap_or_default().to_string(),
        };
        return Ok(Target {
            shown: format!("https://{authority}{path_and_query}"),
            address: if host.contains(':') { format!("[{host}]:{port}") } else { format!("{host}:{port}") },
            server_name: host,
            path_and_query,
        });
    }
    let service = config.service.as_ref().ok_or("the webhook has neither url nor service")?;
    let port = service.port.unwrap_or(443);
    let path = service.path.as_deref().filter(|p| !p.is_empty()).unwrap_or("/");
    let host = format!("{}.{}.svc", service.name, service.namespace);
    let path_and_query = format!("{path}?{timeout}");
    let shown = format!("https://{host}:{port}{path_and_query}");
    let mapped = services.iter().find(|s| s.namespace == service.namespace && s.name == service.name);
    let Some(mapped) = mapped else {
        return Err(format!(
            "Post {}: service {} not found (serve --webhook-service {}/{}=https://HOST:PORT says where it runs)",
            listwatch_meta::validation::go_quote(&shown),
            listwatch_meta::validation::go_quote(&service.name),
            service.namespace,
            service.name
        ));
    };
    Ok(Target { shown, address: mapped.address.clone(), server_name: host, path_and_query })
}

fn tls_config(config: &ClientConfig) -> Result<Arc<TlsConfig>, String> {
    let mut roots = RootCertStore::empty();
    match config.ca_bundle.as_deref().filter(|b| !b.is_empty()) {
        Some(bundle) => {
            let pem = base64::engine::general_purpose::STANDARD
                .decode(bundle)
                .map_err(|e| format!("illegal base64 data in caBundle: {e}"))?;
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| format!("unable to load root certificates: {e}"))?;
                roots.add(cert).map_err(|e| format!("unable to load root certificates: {e}"))?;
            }
            if roots.is_empty() {
                return Err("unable to load root certificates: unable to parse bytes as PEM block".into());
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = TlsConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// POSTs `body` and returns the answer's body; the error is Go's words for what failed. An
/// `injected` failure (the simulator's webhook outage) fails the call as a webhook down, slow
/// or broken would, without reaching it.
pub async fn post(
    config: &ClientConfig,
    timeout: Duration,
    services: &[ServiceUrl],
    body: Vec<u8>,
    injected: Option<WebhookFailure>,
) -> Result<Vec<u8>, String> {
    let target = target(config, timeout, services)?;
    let shown = listwatch_meta::validation::go_quote(&target.shown);
    let tls = tls_config(config)?;
    let call = async {
        match injected {
            None => exchange(&target, tls, body).await,
            Some(WebhookFailure::Down) => {
                Err(Fault::Transport(format!("dial tcp {}: connect: connection refused", target.address)))
            }
            Some(WebhookFailure::Slow) => futures::future::pending().await,
            Some(WebhookFailure::Error) => {
                Err(Fault::Answer(unsuccessful(500, b"the webhook failed (a simulated outage)")))
            }
        }
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(Fault::Transport(e))) => Err(format!("Post {shown}: {e}")),
        Ok(Err(Fault::Answer(e))) => Err(e),
        Err(_) => Err(format!("Post {shown}: context deadline exceeded")),
    }
}

enum Fault {
    /// The request did not get an HTTP answer.
    Transport(String),
    /// It got one that is not a 2xx.
    Answer(String),
}

async fn exchange(target: &Target, tls: Arc<TlsConfig>, body: Vec<u8>) -> Result<Vec<u8>, Fault> {
    let tcp = tokio::net::TcpStream::connect(&target.address).await.map_err(|e| {
        let e = match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
            _ => e.to_string(),
        };
        Fault::Transport(format!("dial tcp {}: {e}", target.address))
    })?;
    let server_name = ServerName::try_from(target.server_name.clone()).map_err(|e| Fault::Transport(e.to_string()))?;
    let stream = tokio_rustls::TlsConnector::from(tls).connect(server_name, tcp).await.map_err(|e| {
        let text = e.to_string();
        Fault::Transport(if text.contains("UnknownIssuer") {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority".into()
        } else if text.contains("NotValidForName") {
            format!("tls: failed to verify certificate: x509: certificate is not valid for {}", target.server_name)
        } else {
            format!("remote error: {text}")
        })
    })?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| Fault::Transport(e.to_string()))?;
    tokio::spawn(connection);
    let request = http::Request::post(&target.path_and_query)
        .header(http::header::HOST, &target.server_name)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .body(Full::new(Bytes::from(body)))
        .map_err(|e| Fault::Transport(e.to_string()))?;
    let response = sender.send_request(request).await.map_err(|e| Fault::Transport(e.to_string()))?;
    let status = response.status();
    let answer = response.into_body().collect().await.map_err(|e| Fault::Transport(e.to_string()))?.to_bytes();
    if !status.is_success() {
        return Err(Fault::Answer(unsuccessful(status.as_u16(), &answer)));
    }
    Ok(answer.to_vec())
}

/// client-go's error for an answer that is not a 2xx: the Status it carries, or its generic
/// words for the code.
fn unsuccessful(code: u16, body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<serde_json::Value>(body)
        && status.get("kind").and_then(|k| k.as_str()) == Some("Status")
        && let Some(message) = status.get("message").and_then(|m| m.as_str())
    {
        return message.to_string();
    }
    let text = String::from_utf8_lossy(body).trim().to_string();
    match code {
        404 => "the server could not find the requested resource".into(),
        500 if !text.is_empty() => format!(
            "an error on the server ({}) has prevented the request from succeeding",
            listwatch_meta::validation::go_quote(&text)
        ),
        503 => "the server is currently unable to handle the request".into(),
        _ => format!("the server responded with the status code {code} but did not return more information"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_urls_parse() {
        let s: ServiceUrl = "system/webhook=https://127.0.0.1:9443".parse().unwrap();
        assert_eq!(
            (s.namespace.as_str(), s.name.as_str(), s.address.as_str()),
            ("system", "webhook", "127.0.0.1:9443")
        );
        assert!("webhook=https://127.0.0.1:9443".parse::<ServiceUrl>().is_err());
        assert!("a/b=".parse::<ServiceUrl>().is_err());
    }

    #[test]
    fn a_service_is_known_by_its_dns_name() {
        let config = ClientConfig {
            service: Some(ServiceReference {
                namespace: "system".into(),
                name: "hook".into(),
                path: Some("/validate".into()),
                port: None,
            }),
            ..Default::default()
        };
        let services = vec!["system/hook=127.0.0.1:9443".parse().unwrap()];
        let t = target(&config, Duration::from_secs(10), &services).unwrap();
        assert_eq!(t.shown, "https://hook.system.svc:443/validate?timeout=10s");
        assert_eq!((t.address.as_str(), t.server_name.as_str()), ("127.0.0.1:9443", "hook.system.svc"));
        let missing = target(&config, Duration::from_secs(10), &[]).err().unwrap();
        assert!(
            missing
                .starts_with("Post \"https://hook.system.svc:443/validate?timeout=10s\": service \"hook\" not found")
        );
    }
}
