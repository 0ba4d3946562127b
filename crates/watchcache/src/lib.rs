//! Watches as kube-apiserver serves them, on top of storage.
//!
//! Two paths, as upstream has:
//!
//! * [`WatchCache`] (the default): one storage watch per resource, started from a list; it
//!   keeps the current objects and a window of recent events, answers cache-allowed LISTs, and
//!   fans every event out to its client watchers through bounded queues (kube-apiserver's
//!   `Cacher`). A watcher that cannot keep up within a shared time budget is closed.
//! * [`direct`] (uncached): each client watch is its own storage watch, proxied straight
//!   through like kube-apiserver's etcd3 watcher.
//!
//! Both produce the same [`WatchEvent`](listwatch_meta::WatchEvent)s (defined in `meta`, so the
//! encoders need not depend on this crate). Which of the two serves a request is decided once,
//! by the apiserver's delegator; the encoding and transport layers never know.

mod budget;
mod cache;
pub mod direct;
mod event;
mod watcher;

#[doc(hidden)]
pub use cache::bench_fixture;
pub use cache::{CacheError, CacheList, CachePage, PageRequest, WatchCache, WatchCacheConfig, WatchCacheStats};
pub use event::Predicate;
pub use watcher::{CacheWatcher, WatchStart, WatcherOptions};
