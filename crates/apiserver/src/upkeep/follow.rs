//! The watch every controller follows a resource with: all its objects after a revision,
//! with bookmarks, for as long as the server runs.

use listwatch_meta::ApiError;

use crate::options::{ListOptions, RequestedVersion};
use crate::registry::{ResourceStore, WatchSource};

/// A watch of every object of `store` after revision `from`, with bookmarks, for a controller
/// (its watches live as long as the server).
pub async fn watch_from(store: &ResourceStore, from: i64) -> Result<WatchSource, ApiError> {
    let options = ListOptions {
        resource_version: RequestedVersion::At(from),
        allow_watch_bookmarks: true,
        watch: true,
        ..ListOptions::default()
    };
    store.watch(&options, None, std::time::Instant::now() + std::time::Duration::from_secs(3600 * 24 * 365)).await
}
