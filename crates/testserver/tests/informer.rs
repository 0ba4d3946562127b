//! listwatch's own informer tested as a kube-rs controller is: against a `TestServer`, through
//! every fault the handle offers, its cache must end equal to a fresh LIST and the audit must
//! find nothing.

use std::collections::BTreeMap;
use std::time::Duration;

use listwatch_client::{Api, ApiResource, DynamicObject, InformerConfig, ListParams, SharedInformer};
use listwatch_testserver::{StreamFault, TestServer};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn name_and_version(object: &DynamicObject) -> (String, String) {
    let meta = &object.0["metadata"];
    (meta["name"].as_str().unwrap_or("").into(), meta["resourceVersion"].as_str().unwrap_or("").into())
}

/// Creates, updates and deletes a few objects (round `round`); a 429 (the throttle fault) is
/// waited out as its Retry-After says.
async fn churn(api: &Api<DynamicObject>, round: usize) {
    for i in 0..6 {
        let object = json!({"metadata": {"name": format!("cm-{round}-{i}")}, "data": {"round": round.to_string()}});
        throttled(|| api.create(&object)).await;
    }
    let changed = json!({"data": {"changed": "yes"}});
    let (changing, deleting) = (format!("cm-{round}-0"), format!("cm-{round}-1"));
    throttled(|| api.patch_merge(&changing, &changed)).await;
    throttled(|| api.delete(&deleting)).await;
}

async fn throttled<T, F: Future<Output = Result<T, listwatch_client::Error>>>(mut write: impl FnMut() -> F) -> T {
    loop {
        match write().await {
            Err(e) if e.code() == Some(429) => tokio::time::sleep(Duration::from_secs(1)).await,
            result => return result.expect("a write"),
        }
    }
}

#[tokio::test]
async fn our_informer_keeps_up_through_every_fault() {
    // A short cache window, so resuming after a fault can meet 410 and must relist.
    let server = TestServer::builder().watch_cache_max_events(10).start().await.expect("start");
    let informer = SharedInformer::new(
        Api::<DynamicObject>::new(server.listwatch_client(), ApiResource::configmaps(), Some("default")),
        InformerConfig::default(),
    );
    // The test's own writes come from a client of their own (the audit tells clients apart by
    // User-Agent and address): they are not the informer's.
    let mut writer = listwatch_client::Config::new(server.url());
    writer.user_agent = "test-writer".into();
    let writer = listwatch_client::Client::new(writer).expect("a client");
    let api = Api::<DynamicObject>::new(writer, ApiResource::configmaps(), Some("default"));
    informer.start();
    assert!(informer.wait_for_sync(WAIT).await, "the informer never synced");

    let faults = server.faults();
    for round in 0..6 {
        churn(&api, round).await;
        match round {
            0 => drop(faults.compact().await.expect("compact")),
            1 => assert!(faults.drop_watches("configmaps").expect("drop") > 0, "the informer had no watch to drop"),
            2 => faults.reset_cache("configmaps").await.expect("reset"),
            3 => faults.streams(StreamFault::Cut { lasting: Duration::ZERO }),
            4 => faults.restart().await.expect("restart"),
            _ => {
                faults.throttle(3, Duration::from_secs(1));
                faults.drop_watches("configmaps").expect("drop");
            }
        }
    }
    churn(&api, 6).await;

    let expected: BTreeMap<String, String> =
        api.list(&ListParams::default()).await.expect("list").items.iter().map(name_and_version).collect();
    let store = informer.store();
    let state = |store: &listwatch_client::Store<DynamicObject>| -> BTreeMap<String, String> {
        store.list().iter().map(|o| name_and_version(o)).collect()
    };
    assert!(store.wait_until(WAIT, |s| state(s) == expected).await, "the cache never matched a LIST");
    let report = server.audit();
    assert!(report.clean(), "the audit found: {:#?}", report.findings);
    informer.stop();
}
