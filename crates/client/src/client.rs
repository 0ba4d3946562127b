//! The HTTP transport: one connection pool per [`Client`], shared by every `Api`, informer and
//! watch made from it (clone the `Client`, it is an `Arc`).
//!
//! Built on hyper-util's pooled client over a hyper-rustls connector:
//! * HTTP/1.1 and HTTP/2; over TLS the version is chosen by ALPN (`h2` preferred, as Go does),
//!   over plain HTTP it is HTTP/1.1 unless [`HttpVersion::Http2Only`] asks for h2c;
//! * HTTP/2 keep-alive pings every 30 s with a 15 s deadline, the values client-go sets
//!   (`ReadIdleTimeout`, `PingTimeout`), so a dead multiplexed connection is noticed even while
//!   its watches are quiet;
//! * TCP keep-alive 30 s and a 30 s connect timeout (client-go's dialer).
//!
//! Responses with a non-2xx status are read in full and turned into [`Error::Api`] with the
//! server's Status (JSON or protobuf), the HTTP code, and `Retry-After`.
//!
//! With an exec credential plugin, each request first asks the [`ExecProvider`] for credentials
//! (running the plugin when the kept ones expired), and a 401 answer to credentials from the
//! plugin makes it run again and the request go once more, if the plugin gave new ones.
//!
//! Only checked against listwatch (HTTP/1.1, h2c, and HTTPS with ALPN h2 and http/1.1, CA
//! bundles, `tls-server-name`, insecure mode) and a test TLS proxy requiring client certificates.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, RETRY_AFTER, USER_AGENT};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::{FixedServerNameResolver, HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use parking_lot::Mutex;

use crate::config::{Auth, Config, HttpVersion};
use crate::error::{Error, Status};
use crate::exec::{ExecConfig, ExecCredentials, ExecProvider};

type HttpClient = hyper_util::client::legacy::Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A connection to one apiserver. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    /// `scheme://authority`.
    origin: String,
    /// The server URL's path prefix, without a trailing `/` (usually empty).
    prefix: String,
    http: HttpClient,
    /// HTTP/1.1-only connector for WebSocket upgrades (ALPN must not pick h2 there).
    websocket_connector: HttpsConnector<HttpConnector>,
    auth: AuthHeader,
}

enum AuthHeader {
    None,
    Fixed(HeaderValue),
    TokenFile { path: std::path::PathBuf, cached: Mutex<Option<(HeaderValue, Instant)>> },
    Exec(Arc<ExecProvider>),
}

/// How often a token file is re-read (client-go's `CachedFileTokenSource` period).
const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(60);

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("server", &self.inner.config.server).finish_non_exhaustive()
    }
}

impl Client {
    /// A client for `config`. Must be called inside a Tokio runtime.
    pub fn new(config: Config) -> Result<Client, Error> {
        let uri: Uri = config.server.parse().map_err(|e| Error::Config(format!("server {:?}: {e}", config.server)))?;
        let scheme =
            uri.scheme_str().ok_or_else(|| Error::Config(format!("server {:?} has no scheme", config.server)))?;
        if scheme != "http" && scheme != "https" {
            return Err(Error::Config(format!("server {:?}: scheme must be http or https", config.server)));
        }
        let authority =
            uri.authority().ok_or_else(|| Error::Config(format!("server {:?} has no host", config.server)))?;
        let origin = format!("{scheme}://{authority}");
        let prefix = uri.path().trim_end_matches('/').to_owned();

        let exec = match &config.auth {
            Auth::Exec(exec) => Some(Arc::new(ExecProvider::new(ExecConfig::clone(exec)))),
            _ => None,
        };
        let tls = crate::tls::client_config(&config.tls, exec.clone())?;
        let server_name = crate::tls::server_name_override(&config.tls)?;
        let mut tcp = HttpConnector::new();
        tcp.enforce_http(false);
        tcp.set_nodelay(true);
        tcp.set_connect_timeout(Some(config.connect_timeout));
        tcp.set_keepalive(Some(Duration::from_secs(30)));

        let builder = || {
            let builder = HttpsConnectorBuilder::new().with_tls_config(tls.clone()).https_or_http();
            match &server_name {
                Some(name) => builder.with_server_name_resolver(FixedServerNameResolver::new(name.clone())),
                None => builder,
            }
        };
        let connector = match config.http_version {
            HttpVersion::Auto => builder().enable_all_versions().wrap_connector(tcp.clone()),
            HttpVersion::Http1Only => builder().enable_http1().wrap_connector(tcp.clone()),
            HttpVersion::Http2Only => builder().enable_http2().wrap_connector(tcp.clone()),
        };
        let websocket_connector = builder().enable_http1().wrap_connector(tcp);

        let mut http = hyper_util::client::legacy::Client::builder(TokioExecutor::new());
        http.timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(90))
            .http2_keep_alive_interval(Duration::from_secs(30))
            .http2_keep_alive_timeout(Duration::from_secs(15))
            .http2_keep_alive_while_idle(true);
        if config.http_version == HttpVersion::Http2Only {
            http.http2_only(true);
        }
        let http = http.build(connector);

        let auth = match &config.auth {
            Auth::None => AuthHeader::None,
            Auth::BearerToken(token) => AuthHeader::Fixed(bearer(token)?),
            Auth::Basic { username, password } => {
                use base64::Engine as _;
                let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
                AuthHeader::Fixed(
                    HeaderValue::from_str(&format!("Basic {encoded}"))
                        .map_err(|_| Error::Config("basic auth credentials are not a valid header".into()))?,
                )
            }
            Auth::BearerTokenFile(path) => AuthHeader::TokenFile { path: path.clone(), cached: Mutex::new(None) },
            Auth::Exec(_) => AuthHeader::Exec(exec.expect("made for Auth::Exec above")),
        };
        Ok(Client { inner: Arc::new(Inner { config, origin, prefix, http, websocket_connector, auth }) })
    }

    /// A client from [`Config::infer`].
    pub fn try_default() -> Result<Client, Error> {
        Client::new(Config::infer()?)
    }

    /// The configuration the client was built from.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// The kubeconfig context's namespace (else `default`).
    pub fn default_namespace(&self) -> &str {
        &self.inner.config.default_namespace
    }

    /// The full URL of an API path (which may carry a query).
    pub fn url(&self, path_and_query: &str) -> String {
        format!("{}{}{}", self.inner.origin, self.inner.prefix, path_and_query)
    }

    pub(crate) fn websocket_connector(&self) -> HttpsConnector<HttpConnector> {
        self.inner.websocket_connector.clone()
    }

    /// The `Authorization` header value, if any (re-reading a token file, or running an exec
    /// plugin, when due).
    pub(crate) async fn authorization(&self) -> Result<Option<HeaderValue>, Error> {
        Ok(self.credentials().await?.0)
    }

    /// The `Authorization` header value, if any, and the exec plugin's credentials it came from.
    async fn credentials(&self) -> Result<(Option<HeaderValue>, Option<Arc<ExecCredentials>>), Error> {
        match &self.inner.auth {
            AuthHeader::Exec(provider) => {
                let credentials = provider.credentials().await?;
                let header = credentials.token.as_deref().map(bearer).transpose()?;
                Ok((header, Some(credentials)))
            }
            _ => Ok((self.fixed_or_file_authorization()?, None)),
        }
    }

    /// The `Authorization` header of a fixed credential or a token file.
    fn fixed_or_file_authorization(&self) -> Result<Option<HeaderValue>, Error> {
        match &self.inner.auth {
            AuthHeader::None | AuthHeader::Exec(_) => Ok(None),
            AuthHeader::Fixed(value) => Ok(Some(value.clone())),
            AuthHeader::TokenFile { path, cached } => {
                let mut cached = cached.lock();
                if let Some((value, read_at)) = &*cached
                    && read_at.elapsed() < TOKEN_FILE_REFRESH
                {
                    return Ok(Some(value.clone()));
                }
                match std::fs::read_to_string(path) {
                    Ok(token) => {
                        let value = bearer(token.trim())?;
                        *cached = Some((value.clone(), Instant::now()));
                        Ok(Some(value))
                    }
                    // A rotation in progress: keep using the last token we read.
                    Err(_) if cached.is_some() => Ok(cached.as_ref().map(|(v, _)| v.clone())),
                    Err(e) => Err(Error::Config(format!("reading the token file {}: {e}", path.display()))),
                }
            }
        }
    }

    /// Sends a request and returns the response head once it arrives, whatever its status.
    pub async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        accept: &str,
        body: Option<(&str, Bytes)>,
    ) -> Result<Response<Incoming>, Error> {
        let url = self.url(path_and_query);
        let (authorization, used) = self.credentials().await?;
        let request = self.build(&method, &url, accept, &body, authorization)?;
        let response =
            self.inner.http.request(request).await.map_err(|source| Error::Request { url: url.clone(), source })?;
        let (AuthHeader::Exec(provider), Some(used)) = (&self.inner.auth, used) else { return Ok(response) };
        if response.status() != StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        // The plugin's credentials were refused: run it again, and try once more if it gave
        // new ones (a revoked token that the plugin still hands out stays a 401).
        provider.refused(&used);
        let fresh = provider.credentials().await?;
        if fresh.token == used.token && fresh.client_certificate_pem == used.client_certificate_pem {
            return Ok(response);
        }
        drop(response);
        let authorization = fresh.token.as_deref().map(bearer).transpose()?;
        let request = self.build(&method, &url, accept, &body, authorization)?;
        self.inner.http.request(request).await.map_err(|source| Error::Request { url, source })
    }

    /// A request with this client's headers and `authorization`.
    fn build(
        &self,
        method: &Method,
        url: &str,
        accept: &str,
        body: &Option<(&str, Bytes)>,
        authorization: Option<HeaderValue>,
    ) -> Result<Request<Full<Bytes>>, Error> {
        let mut request = Request::builder()
            .method(method.clone())
            .uri(url)
            .header(ACCEPT, accept)
            .header(USER_AGENT, &self.inner.config.user_agent);
        if let Some(value) = authorization {
            request = request.header(AUTHORIZATION, value);
        }
        let body = match body {
            Some((content_type, bytes)) => {
                request = request.header(CONTENT_TYPE, *content_type);
                Full::new(bytes.clone())
            }
            None => Full::new(Bytes::new()),
        };
        request.body(body).map_err(|e| Error::InvalidRequest(format!("{url}: {e}")))
    }

    /// Sends a request and reads the whole successful body; non-2xx becomes [`Error::Api`].
    /// Honors [`Config::request_timeout`].
    pub async fn request(
        &self,
        method: Method,
        path_and_query: &str,
        accept: &str,
        body: Option<(&str, Bytes)>,
    ) -> Result<(HeaderMap, Bytes), Error> {
        self.within_request_timeout(async {
            let response = self.send(method, path_and_query, accept, body).await?;
            let (parts, body) = check_status(response).await?.into_parts();
            let bytes = body.collect().await.map_err(Error::Body)?.to_bytes();
            Ok((parts.headers, bytes))
        })
        .await
    }

    /// Runs a whole exchange within [`Config::request_timeout`] when set.
    pub(crate) async fn within_request_timeout<T>(
        &self,
        exchange: impl Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        match self.inner.config.request_timeout {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .unwrap_or(Err(Error::Timeout { what: "the request", after: limit })),
            None => exchange.await,
        }
    }

    /// Sends a request whose body is a stream (a watch): returns the response once a 2xx head
    /// arrives; non-2xx becomes [`Error::Api`]. The head must arrive within
    /// [`Config::request_timeout`] when set.
    pub async fn request_stream(
        &self,
        method: Method,
        path_and_query: &str,
        accept: &str,
    ) -> Result<Response<Incoming>, Error> {
        let exchange = async { check_status(self.send(method, path_and_query, accept, None).await?).await };
        match self.inner.config.request_timeout {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .unwrap_or(Err(Error::Timeout { what: "waiting for the response head", after: limit })),
            None => exchange.await,
        }
    }
}

fn bearer(token: &str) -> Result<HeaderValue, Error> {
    let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| Error::Config("the bearer token is not a valid header value".into()))?;
    value.set_sensitive(true);
    Ok(value)
}

/// A 2xx response as is; anything else read in full and turned into the server's Status.
async fn check_status(response: Response<Incoming>) -> Result<Response<Incoming>, Error> {
    let code = response.status();
    if code.is_success() {
        return Ok(response);
    }
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.map(http_body_util::Collected::to_bytes).unwrap_or_default();
    Err(status_error(code, &parts.headers, &bytes))
}

/// The Status a failed response carries (or one made from its code and text).
pub(crate) fn status_error(code: StatusCode, headers: &HeaderMap, body: &[u8]) -> Error {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mut status = decode_status(content_type, body)
        .filter(|s: &Status| !s.status.is_empty() || s.code != 0 || !s.reason.is_empty())
        .unwrap_or_else(|| Status::from_http(code.as_u16(), body));
    if status.code == 0 {
        status.code = code.as_u16();
    }
    let retry_after = headers.get(RETRY_AFTER).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u32>().ok());
    if let Some(seconds) = retry_after {
        let details = status.details.get_or_insert_with(Default::default);
        details.retry_after_seconds.get_or_insert(seconds);
    }
    Error::from(status)
}

fn decode_status(content_type: &str, body: &[u8]) -> Option<Status> {
    if content_type.starts_with("application/vnd.kubernetes.protobuf") {
        #[cfg(feature = "protobuf")]
        return crate::event::decode_protobuf_object(body).ok().and_then(|v| serde_json::from_value(v).ok());
        #[cfg(not(feature = "protobuf"))]
        return None;
    }
    serde_json::from_slice::<Status>(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_responses_keep_the_servers_status_and_retry_after() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("3"));
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"slow down","reason":"TooManyRequests","code":429}"#;
        let err = status_error(StatusCode::TOO_MANY_REQUESTS, &headers, body);
        assert!(err.is_too_many_requests());
        assert_eq!(err.retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(err.status().unwrap().message, "slow down");

        let err = status_error(StatusCode::BAD_GATEWAY, &HeaderMap::new(), b"<html>bad gateway</html>");
        assert_eq!(err.code(), Some(502));
        assert_eq!(err.status().unwrap().message, "<html>bad gateway</html>");
    }

    #[tokio::test]
    async fn urls_keep_the_server_path_prefix() {
        let client = Client::new(Config::new("https://example.invalid:6443/k8s/clusters/c1/")).unwrap();
        assert_eq!(
            client.url("/api/v1/pods?watch=true"),
            "https://example.invalid:6443/k8s/clusters/c1/api/v1/pods?watch=true"
        );
        assert!(Client::new(Config::new("ftp://x")).is_err());
    }
}
