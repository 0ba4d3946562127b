//! RetryWatcher: following one watch across stream ends, bookmarks passed over, and stopping at
//! a 410.

use std::time::Duration;

use futures::StreamExt;
use listwatch_client::{ListParams, Object, RetryWatcher, RetryWatcherConfig, WatchEvent};

use crate::support::{Backend, Server, WAIT, configmap, configmaps};

#[tokio::test]
async fn retry_watcher_follows_across_stream_ends_and_stops_at_410() {
    let server = Server::start("retry-watcher", Backend::Memory, &["--bookmark-interval", "1s"]).await;
    let client = server.client();
    let api = configmaps(&client, "default");
    assert!(RetryWatcher::new(api.clone(), "0", RetryWatcherConfig::default()).is_err());
    assert!(RetryWatcher::new(api.clone(), "", RetryWatcherConfig::default()).is_err());
    let start = api.list(&ListParams::default()).await.unwrap().metadata.resource_version;
    let config = RetryWatcherConfig {
        min_restart_delay: Duration::from_millis(100),
        timeout: Some(Duration::from_secs(2)),
        ..RetryWatcherConfig::default()
    };
    let mut watcher = RetryWatcher::new(api.clone(), &start, config).unwrap();

    let writes = 12;
    for i in 0..writes {
        api.create(&configmap(&format!("r{i}"), "0")).await.unwrap();
        if i % 4 == 3 {
            server.debug("watchers/drop?resource=configmaps").await;
        }
    }
    let mut names = Vec::new();
    let mut last_rv = start.parse::<u64>().unwrap();
    while names.len() < writes {
        let event = tokio::time::timeout(WAIT, watcher.next()).await.expect("an event in time").expect("open");
        let WatchEvent::Added(object) = event else { panic!("unexpected {event:?}") };
        let rv: u64 = object.resource_version().unwrap().parse().unwrap();
        assert!(rv > last_rv, "resourceVersions only grow: {rv} after {last_rv}");
        last_rv = rv;
        names.push(object.name().to_owned());
    }
    assert_eq!(names, (0..writes).map(|i| format!("r{i}")).collect::<Vec<_>>());

    // Idle through a few server timeouts: bookmarks advance the RV and are not passed on.
    let quiet = tokio::time::timeout(Duration::from_secs(5), watcher.next()).await;
    assert!(quiet.is_err(), "nothing to deliver: {quiet:?}");
    assert!(watcher.resource_version().parse::<u64>().unwrap() >= last_rv);

    // A RetryWatcher from before a reset of the history gets a 410, passes it on and stops.
    server.debug("cache/reset?resource=configmaps").await;
    let config = RetryWatcherConfig { min_restart_delay: Duration::from_millis(100), ..RetryWatcherConfig::default() };
    let mut stale = RetryWatcher::new(api.clone(), &start, config).unwrap();
    let mut got_410 = false;
    while let Some(event) = tokio::time::timeout(WAIT, stale.next()).await.expect("the watcher ends in time") {
        match event {
            WatchEvent::Error(status) => {
                assert_eq!(status.code, 410);
                got_410 = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(got_410, "the watcher stopped after a 410");
}
