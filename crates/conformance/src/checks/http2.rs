//! Many watches on one HTTP/2 connection (spec §2.1): client-go multiplexes every watch and
//! request of a process over one HTTP/2 connection per server, so a server must keep dozens of
//! long-lived streams on one connection independent, each with its own response head and its
//! own events. Over plain TCP the check speaks HTTP/2 with prior knowledge (h2c) on a single
//! TCP stream it opens itself (hyper's connection-level client), so "one connection" holds by
//! construction; over TLS it uses the target's client, which offers h2 by ALPN (Skipped when
//! the server does not choose it), and opens the rest once the first watch holds the
//! connection, so that they share it.

use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::checks::expect::{Expected, expect_sequence};
use crate::checks::stream::check_head;
use crate::fixture::Fixture;
use crate::http::truncate;
use crate::watch::{BodyError, BodyStream, EVENT_TIMEOUT, WatchStream};
use crate::{CheckFailure, Target};

/// How many watches share the connection.
const WATCHES: usize = 50;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Aborts the connection task when the check is done with it.
struct Connection(tokio::task::JoinHandle<()>);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// §2.1: 50 watches on one HTTP/2 connection each answer 200 with a watch head, and each
/// receives the ADDED of an object created after they are all open.
pub async fn many_watches_one_connection(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "http2-many-watches");
    let start = fx.current_rv().await?;
    let path = fx.watch_query(&format!("resourceVersion={start}&timeoutSeconds=60"));
    let (mut watches, _connection) = if target.base_url.starts_with("https://") {
        (over_tls(target, &path).await?, None)
    } else {
        let (watches, connection) = h2c(target, &path).await?;
        (watches, Some(connection))
    };
    for watch in &watches {
        check_head(watch)?;
    }
    let a = fx.create("a", "1").await?;
    let reads = futures::future::join_all(watches.iter_mut().map(|w| w.next_event(EVENT_TIMEOUT))).await;
    for (i, (watch, read)) in watches.iter().zip(reads).enumerate() {
        let event = read.map_err(|failure| match failure {
            CheckFailure::Failed { why, evidence } => {
                CheckFailure::Failed { why: format!("watch {i} of {WATCHES} on one connection: {why}"), evidence }
            }
            skipped => skipped,
        })?;
        expect_sequence(
            watch,
            &format!("watch {i} of {WATCHES} on one connection"),
            &[event],
            &[Expected::new("ADDED", &a)],
            start,
        )?;
    }
    Ok(())
}

/// Over TLS: the target's client (ALPN offers h2); Skipped when the server picks HTTP/1.1.
async fn over_tls(target: &Target, path: &str) -> Result<Vec<WatchStream>, CheckFailure> {
    let first = target.watch(path).await?;
    if first.version != reqwest::Version::HTTP_2 {
        return Err(CheckFailure::skipped(format!(
            "the HTTPS server answered with {:?}, not HTTP/2 (it did not choose h2 by ALPN)",
            first.version
        )));
    }
    let rest = futures::future::join_all((1..WATCHES).map(|_| target.watch(path))).await;
    let mut watches = vec![first];
    for watch in rest {
        let watch = watch?;
        if watch.version != reqwest::Version::HTTP_2 {
            return Err(watch.failure(&format!("a later watch was served over {:?}, not HTTP/2", watch.version)));
        }
        watches.push(watch);
    }
    Ok(watches)
}

/// Over plain TCP: one connection, HTTP/2 with prior knowledge; Skipped when the server does
/// not speak it there.
async fn h2c(target: &Target, path: &str) -> Result<(Vec<WatchStream>, Connection), CheckFailure> {
    let authority = target.base_url.trim_start_matches("http://").split('/').next().unwrap_or_default().to_string();
    let tcp = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::TcpStream::connect(&authority))
        .await
        .map_err(|_| CheckFailure::failed(format!("connecting to {authority}: no answer within 10 s")))?
        .map_err(|e| CheckFailure::failed(format!("connecting to {authority}: {e}")))?;
    let not_h2c = |e: &dyn std::fmt::Display| {
        CheckFailure::skipped(format!(
            "the server does not speak HTTP/2 with prior knowledge (h2c) on its plain-HTTP port ({e}); kube-apiserver speaks HTTP/2 over TLS only"
        ))
    };
    let (sender, connection) = tokio::time::timeout(
        CONNECT_TIMEOUT,
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp)),
    )
    .await
    .map_err(|_| CheckFailure::failed("the HTTP/2 handshake did not finish within 10 s"))?
    .map_err(|e| not_h2c(&e))?;
    let connection = Connection(tokio::spawn(async move {
        let _ = connection.await;
    }));
    let url = format!("http://{authority}{path}");
    let url = url.as_str();
    let open = |sender: hyper::client::conn::http2::SendRequest<Empty<Bytes>>| async move {
        let mut sender = sender;
        let mut request = http::Request::get(url).header(http::header::ACCEPT, "application/json");
        if let Some(token) = target.bearer_token().await?.0 {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = request
            .body(Empty::<Bytes>::new())
            .map_err(|e| CheckFailure::failed(format!("building the request: {e}")))?;
        let sent_at = std::time::Instant::now();
        // None: no response head in time.
        let response = tokio::time::timeout(CONNECT_TIMEOUT, sender.send_request(request)).await.ok();
        Ok::<_, CheckFailure>((response, sent_at))
    };
    let mut watches = Vec::with_capacity(WATCHES);
    // The first one tells whether the server speaks h2c at all (an HTTP/1.1-only server
    // refuses the preface or waits for more).
    let (first, sent_at) = open(sender.clone()).await?;
    let first = first.ok_or_else(|| not_h2c(&"no answer within 10 s"))?.map_err(|e| not_h2c(&e))?;
    watches.push(into_watch(path, first, sent_at).await?);
    let rest = futures::future::join_all((1..WATCHES).map(|_| open(sender.clone()))).await;
    for (i, opened) in rest.into_iter().enumerate() {
        let (response, sent_at) = opened?;
        let which = format!("GET {path}: watch {} of {WATCHES} on one HTTP/2 connection", i + 1);
        let response = response
            .ok_or_else(|| CheckFailure::failed(format!("{which}: no response head within 10 s")))?
            .map_err(|e| CheckFailure::failed(format!("{which}: {e}")))?;
        watches.push(into_watch(path, response, sent_at).await?);
    }
    Ok((watches, connection))
}

/// A watch from an HTTP/2 response that must be a 200.
async fn into_watch(
    path: &str,
    response: http::Response<hyper::body::Incoming>,
    sent_at: std::time::Instant,
) -> Result<WatchStream, CheckFailure> {
    let status = response.status().as_u16();
    let version = response.version();
    let headers = response.headers().clone();
    if status != 200 {
        let body = tokio::time::timeout(crate::http::REQUEST_TIMEOUT, response.into_body().collect())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|b| truncate(&b.to_bytes()))
            .unwrap_or_default();
        return Err(CheckFailure::failed_with(
            format!("GET {path} over HTTP/2: a watch must answer 200, got {status}"),
            body,
        ));
    }
    let body: BodyStream = Box::pin(response.into_body().into_data_stream().map(|r| r.map_err(BodyError::from)));
    Ok(WatchStream::new(path, headers, version, sent_at, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An HTTP/1.1-only server answers the HTTP/2 preface with a 400 and hangs up: Skipped,
    /// not Failed.
    #[tokio::test]
    async fn a_server_without_h2c_is_skipped() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut buffer = [0u8; 1024];
            let _ = socket.read(&mut buffer).await;
            let _ =
                socket.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").await;
        });
        let target = Target::new(&format!("http://{addr}")).unwrap();
        match h2c(&target, "/api/v1/configmaps?watch=1").await {
            Err(CheckFailure::Skipped { why }) => assert!(why.contains("h2c"), "{why}"),
            Err(other) => panic!("expected Skipped, got {other:?}"),
            Ok(_) => panic!("expected Skipped, got watches"),
        }
    }
}
