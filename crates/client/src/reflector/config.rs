//! A reflector's settings: which objects, page sizes, watch timeouts, backoff, streaming lists
//! and where errors are reported. Apart from the state machine that reads them, which is long
//! enough on its own; [`super`] re-exports them.

use std::sync::Arc;
use std::time::Duration;

use super::ReflectorError;
use crate::backoff::BackoffConfig;
use crate::params::DEFAULT_IDLE_MARGIN;

/// client-go's pager default page size.
pub const DEFAULT_PAGE_SIZE: u32 = 500;

/// Reports an error and what the reflector does about it.
pub type ErrorHandler = Arc<dyn Fn(&ReflectorError) + Send + Sync>;

/// A reflector's settings. The defaults are client-go's; every timing can be shortened for tests.
#[derive(Clone)]
pub struct ReflectorConfig {
    /// A name for logs (`configmaps`, `pods.v1`).
    pub name: String,
    /// Lists and watches only objects these labels select.
    pub label_selector: Option<String>,
    /// Lists and watches only objects these fields select.
    pub field_selector: Option<String>,
    /// A fixed page size for every list (client-go `WatchListPageSize`); `None` follows
    /// client-go's policy (see the module docs).
    pub page_size: Option<u32>,
    /// Watches ask for `timeoutSeconds` uniformly in [this, 2×this). Default 5 minutes.
    pub min_watch_timeout: Duration,
    /// The client-side idle limit is the watch timeout plus this. Default 5 s.
    pub idle_margin: Duration,
    /// The waits between retries after errors (client-go's: 800 ms doubling to 30 s, jittered).
    pub backoff: BackoffConfig,
    /// Sync by streaming list (`sendInitialEvents=true`) first, falling back to LIST.
    pub streaming_list: bool,
    /// How long a streaming list may take to reach its initial-events-end bookmark before this
    /// sync falls back to LIST. Default 60 s.
    pub initial_events_timeout: Duration,
    /// How often to warn while that bookmark is awaited. Default 10 s (client-go's).
    pub initial_events_warning_interval: Duration,
    /// How many streaming lists one sync tries (after 410s and 429s) before it lists. Default 3.
    pub streaming_list_attempts: u32,
    /// A watch that ends within this with no event at all is an error and causes a relist
    /// (client-go `VeryShortWatchError`). Default 1 s.
    pub very_short_watch: Duration,
    /// A limit for each LIST request (page). Default 5 minutes; `None` for none (client-go).
    pub list_timeout: Option<Duration>,
    /// Receives every error with what happens next. Default: logged through `tracing` at
    /// client-go's levels (expired and dropped connections at debug, the rest as warnings).
    pub error_handler: Option<ErrorHandler>,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            name: String::new(),
            label_selector: None,
            field_selector: None,
            page_size: None,
            min_watch_timeout: Duration::from_secs(300),
            idle_margin: DEFAULT_IDLE_MARGIN,
            backoff: BackoffConfig::default(),
            streaming_list: false,
            initial_events_timeout: Duration::from_secs(60),
            initial_events_warning_interval: Duration::from_secs(10),
            streaming_list_attempts: 3,
            very_short_watch: Duration::from_secs(1),
            list_timeout: Some(Duration::from_secs(300)),
            error_handler: None,
        }
    }
}

impl std::fmt::Debug for ReflectorConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("name", &self.name)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("page_size", &self.page_size)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("streaming_list", &self.streaming_list)
            .finish_non_exhaustive()
    }
}
