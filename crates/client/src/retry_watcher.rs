//! [`RetryWatcher`]: a watch that survives stream ends, for callers that track a
//! resourceVersion themselves (client-go `tools/watch.RetryWatcher`, spec client-machinery.md
//! §1.10).
//!
//! * It must start from a real resourceVersion: `""` and `"0"` are refused, because the
//!   synthetic ADDED events such a watch starts with are not in resourceVersion order, so a
//!   restart from "the last one seen" could skip changes (kubernetes#74022).
//! * Bookmarks are requested; they advance the resourceVersion and are not passed on.
//! * When a stream ends (server timeout, dropped connection, a retriable error) the watch is
//!   re-opened from the last resourceVersion, at most once per `min_restart_delay` (1 s), plus
//!   the server's `retryAfterSeconds` when it gave one.
//! * An `ERROR` with code 410 is passed on and the watcher stops: it never recovers from a
//!   too-old resourceVersion (use an informer for that). 401/403 when opening the watch are
//!   passed on as `ERROR` and stop it too. An object without a resourceVersion stops it with an
//!   InternalError, since continuing could skip data.
//!
//! One difference from client-go: a 410 answered to the watch *request* (rather than as an
//! in-stream `ERROR`, which is how kube-apiserver and listwatch send it) also stops the watcher
//! here; client-go retries it, which can never succeed since the resourceVersion only ages.
//!
//! Only checked against listwatch and scripted fakes, not against a real kube-apiserver.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use parking_lot::Mutex;
use tokio::time::Instant;

use crate::error::{Error, Status};
use crate::event::WatchEvent;
use crate::params::WatchParams;
use crate::reflector::ListerWatcher;
use crate::resource::Object;
use crate::watch::WatchStream;

/// A RetryWatcher's settings.
#[derive(Clone, Debug)]
pub struct RetryWatcherConfig {
    /// Watches only objects these labels select.
    pub label_selector: Option<String>,
    /// Watches only objects these fields select.
    pub field_selector: Option<String>,
    /// At most one watch request per this (client-go: 1 s).
    pub min_restart_delay: Duration,
    /// `timeoutSeconds` of each watch (`None`: the server's choice).
    pub timeout: Option<Duration>,
    /// The client-side idle limit (`None`: the timeout plus 5 s, or none).
    pub idle_timeout: Option<Duration>,
}

impl Default for RetryWatcherConfig {
    fn default() -> Self {
        RetryWatcherConfig {
            label_selector: None,
            field_selector: None,
            min_restart_delay: Duration::from_secs(1),
            timeout: None,
            idle_timeout: None,
        }
    }
}

/// A self-restarting watch; a stream of [`WatchEvent`]s without bookmarks. Ends after a 410 or
/// another fatal error (the last item is then [`WatchEvent::Error`]).
pub struct RetryWatcher<K> {
    events: BoxStream<'static, WatchEvent<K>>,
    resource_version: Arc<Mutex<String>>,
}

struct State<K> {
    lister_watcher: Arc<dyn ListerWatcher<K>>,
    config: RetryWatcherConfig,
    resource_version: Arc<Mutex<String>>,
    stream: Option<WatchStream<K>>,
    last_start: Option<Instant>,
    extra_delay: Duration,
    done: bool,
}

impl<K: Object> RetryWatcher<K> {
    /// Watches from `resource_version`, which must not be `""` or `"0"`.
    pub fn new(
        lister_watcher: impl ListerWatcher<K>,
        resource_version: &str,
        config: RetryWatcherConfig,
    ) -> Result<RetryWatcher<K>, Error> {
        if resource_version.is_empty() || resource_version == "0" {
            return Err(Error::InvalidRequest(format!(
                "initial resourceVersion {resource_version:?} is not supported: a RetryWatcher needs a specific \
                 resourceVersion, since the synthetic events of a watch from \"\" or \"0\" are unordered"
            )));
        }
        let shared_rv = Arc::new(Mutex::new(resource_version.to_owned()));
        let state = State {
            lister_watcher: Arc::new(lister_watcher),
            config,
            resource_version: shared_rv.clone(),
            stream: None,
            last_start: None,
            extra_delay: Duration::ZERO,
            done: false,
        };
        let events = futures::stream::unfold(state, |mut state| async move {
            let event = state.next().await?;
            Some((event, state))
        })
        .boxed();
        Ok(RetryWatcher { events, resource_version: shared_rv })
    }

    /// The resourceVersion a restart would watch from.
    pub fn resource_version(&self) -> String {
        self.resource_version.lock().clone()
    }
}

impl<K: Object> State<K> {
    fn stop_with(&mut self, status: Status) -> Option<WatchEvent<K>> {
        self.done = true;
        self.stream = None;
        Some(WatchEvent::Error(Box::new(status)))
    }

    async fn next(&mut self) -> Option<WatchEvent<K>> {
        loop {
            if self.done {
                return None;
            }
            let Some(stream) = &mut self.stream else {
                if let Err(status) = self.open().await {
                    return self.stop_with(status);
                }
                continue;
            };
            match stream.next().await {
                Some(Ok(WatchEvent::Bookmark(bookmark))) => {
                    if !bookmark.resource_version.is_empty() {
                        *self.resource_version.lock() = bookmark.resource_version;
                    }
                }
                Some(Ok(WatchEvent::Error(status))) => {
                    let retry_after = status.retry_after().unwrap_or_default();
                    match status.code {
                        410 => return self.stop_with(*status),
                        500 | 504 => tracing::debug!(%status, "retry watcher: retrying"),
                        _ => tracing::debug!(%status, "retry watcher: unexpected error, retrying"),
                    }
                    self.extra_delay = retry_after;
                    self.stream = None;
                }
                Some(Ok(event)) => {
                    let (WatchEvent::Added(object) | WatchEvent::Modified(object) | WatchEvent::Deleted(object)) =
                        &event
                    else {
                        unreachable!("bookmarks and errors are handled above")
                    };
                    match object.resource_version().filter(|rv| !rv.is_empty()) {
                        Some(rv) => *self.resource_version.lock() = rv.to_owned(),
                        None => {
                            return self.stop_with(Status {
                                status: "Failure".into(),
                                reason: "InternalError".into(),
                                code: 500,
                                message: format!("retry watcher: object {:?} has no resourceVersion", object.key()),
                                ..Status::default()
                            });
                        }
                    }
                    return Some(event);
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "retry watcher: the watch broke; re-watching");
                    self.stream = None;
                }
                None => self.stream = None,
            }
        }
    }

    /// Opens the next watch, at most once per `min_restart_delay` (+ any Retry-After). A
    /// refusal that must stop the watcher is returned as its Status; other failures leave no
    /// stream, so the next call tries again.
    async fn open(&mut self) -> Result<(), Status> {
        if let Some(last) = self.last_start {
            tokio::time::sleep_until(last + self.config.min_restart_delay + self.extra_delay).await;
        }
        self.last_start = Some(Instant::now());
        self.extra_delay = Duration::ZERO;
        let params = WatchParams {
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            resource_version: self.resource_version.lock().clone(),
            timeout: self.config.timeout,
            allow_bookmarks: true,
            send_initial_events: None,
            idle_timeout: self.config.idle_timeout,
        };
        match self.lister_watcher.watch(&params).await {
            Ok(stream) => self.stream = Some(stream),
            Err(Error::Api(status)) if matches!(status.code, 401 | 403 | 410) => return Err(*status),
            Err(e) => {
                self.extra_delay = e.retry_after().unwrap_or_default();
                tracing::debug!(error = %e, "retry watcher: opening the watch failed; retrying");
            }
        }
        Ok(())
    }
}

impl<K> futures::Stream for RetryWatcher<K> {
    type Item = WatchEvent<K>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.events.poll_next_unpin(cx)
    }
}
