//! Pages at past revisions from the cache: each must equal the collection as storage held it
//! at that revision, for every start key, limit and predicate, with changes of every kind in
//! between (a model records the state after each write).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use listwatch_meta::{Object, Registry, Resource};
use listwatch_storage::Storage;
use listwatch_storage::memory::MemoryStore;
use listwatch_watchcache::{PageRequest, Predicate, WatchCache, WatchCacheConfig};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;

const PREFIX: &str = "/registry/configmaps/";

fn configmaps() -> &'static Resource {
    Registry.find("", "v1", "configmaps").unwrap()
}

fn key(namespace: &str, name: &str) -> String {
    format!("{PREFIX}{namespace}/{name}")
}

fn value(namespace: &str, name: &str, generation: u32) -> Bytes {
    let v = json!({"kind":"ConfigMap","apiVersion":"v1",
        "metadata":{"name":name,"namespace":namespace,"labels":{"even": (generation % 2 == 0).to_string()}},
        "data":{"g":generation.to_string()}});
    Bytes::from(serde_json::to_vec(&v).unwrap())
}

/// What storage held after each revision: key → (data generation, mod revision).
type Model = BTreeMap<i64, BTreeMap<String, (String, i64)>>;

async fn start(config: WatchCacheConfig) -> (Arc<dyn Storage>, WatchCache) {
    let storage: Arc<dyn Storage> = Arc::new(MemoryStore::ephemeral());
    let cache = WatchCache::start(configmaps(), PREFIX.into(), storage.clone(), config);
    assert!(cache.wait_ready(Duration::from_secs(5)).await);
    (storage, cache)
}

/// Random creates, updates and deletes of 30 names in three namespaces; the model after each.
async fn random_writes(storage: &Arc<dyn Storage>, rng: &mut StdRng, writes: usize) -> Model {
    let mut now: BTreeMap<String, (String, i64)> = BTreeMap::new();
    let mut model = Model::new();
    for generation in 0..writes as u32 {
        let namespace = ["a", "b", "c"][rng.random_range(0..3)];
        let name = format!("cm-{:02}", rng.random_range(0..10));
        let k = key(namespace, &name);
        let revision = match now.get(&k).map(|(_, rv)| *rv) {
            None => storage.create(k.as_bytes(), value(namespace, &name, generation)).await.unwrap().revision,
            Some(rv) if rng.random_bool(0.3) => {
                let revision = storage.delete(k.as_bytes(), Some(rv)).await.unwrap().revision;
                now.remove(&k);
                model.insert(revision, now.clone());
                continue;
            }
            Some(rv) => storage.update(k.as_bytes(), value(namespace, &name, generation), rv).await.unwrap().revision,
        };
        now.insert(k, (generation.to_string(), revision));
        model.insert(revision, now.clone());
    }
    model
}

fn described(items: &[Arc<Object>]) -> Vec<(String, String, i64)> {
    items
        .iter()
        .map(|o| {
            let data = o.value()["data"]["g"].as_str().unwrap().to_owned();
            (key(o.namespace(), o.name()), data, o.resource_version())
        })
        .collect()
}

#[tokio::test]
async fn pages_at_past_revisions_equal_storage_then() {
    let (storage, cache) = start(WatchCacheConfig::default()).await;
    let mut rng = StdRng::seed_from_u64(4988);
    let model = random_writes(&storage, &mut rng, 400).await;
    let newest = *model.keys().last().unwrap();
    cache.wait_until_fresh(newest).await.unwrap();
    let even: Predicate = Arc::new(|o: &Object| o.labels().is_some_and(|l| l.get("even").is_some_and(|v| v == "true")));
    let end = listwatch_storage::prefix_end(PREFIX.as_bytes());
    for &at in model.keys().step_by(7) {
        let then = &model[&at];
        for (start, limit, filtered) in
            [(key("a", ""), 0, false), (key("b", "cm-04"), 5, false), (key("a", ""), 4, true)]
        {
            let expected: Vec<(String, String, i64)> = then
                .range(start.clone()..)
                .filter(|(_, (g, _))| !filtered || g.parse::<u32>().unwrap() % 2 == 0)
                .map(|(k, (g, rv))| (k.clone(), g.clone(), *rv))
                .collect();
            let request = PageRequest {
                start: start.as_bytes(),
                end: &end,
                resource_version: Some(at),
                limit,
                predicate: filtered.then_some(&even),
                count: true,
            };
            let page = cache.page(&request, None).await.unwrap().expect("a revision in the window");
            assert_eq!(page.resource_version, at);
            let wanted = if limit == 0 { expected.len() } else { limit.min(expected.len()) };
            assert_eq!(described(&page.items), expected[..wanted], "at {at} from {start} limit {limit}");
            // Keys from the start to the end of the range, matching or not.
            assert_eq!(page.count, Some(then.range(start.clone()..).count()), "count at {at}");
            // The next page starts after the last item when any key follows it.
            let last = page.items.last().map(|o| key(o.namespace(), o.name()));
            let more = last.as_ref().is_some_and(|l| then.range(l.clone()..).nth(1).is_some());
            let full = limit > 0 && page.items.len() == limit;
            assert_eq!(page.last_key.as_deref(), last.filter(|_| full && more).as_ref().map(String::as_bytes));
        }
    }
}

#[tokio::test]
async fn revisions_the_window_no_longer_has_are_not_served() {
    let config = WatchCacheConfig { min_events: 10, max_events: 20, ..WatchCacheConfig::default() };
    let (storage, cache) = start(config).await;
    let mut rng = StdRng::seed_from_u64(1);
    let model = random_writes(&storage, &mut rng, 60).await;
    let newest = *model.keys().last().unwrap();
    cache.wait_until_fresh(newest).await.unwrap();
    let end = listwatch_storage::prefix_end(PREFIX.as_bytes());
    let request = |at| PageRequest {
        start: PREFIX.as_bytes(),
        end: &end,
        resource_version: Some(at),
        limit: 0,
        predicate: None,
        count: false,
    };
    // Older than the 20 events kept: storage's to answer.
    let first = *model.keys().next().unwrap();
    assert!(cache.page(&request(first), None).await.unwrap().is_none());
    // Newer than the cache has reached: storage's too.
    assert!(cache.page(&request(newest + 1), None).await.unwrap().is_none());
    // The newest events are still there.
    let recent = *model.keys().nth_back(5).unwrap();
    assert!(cache.page(&request(recent), None).await.unwrap().is_some());
}
