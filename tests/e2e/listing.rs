//! LIST with kube-apiserver's resourceVersion, resourceVersionMatch and paging semantics
//! (spec §1.4 and §7), and writes that race.

use serde_json::{Value, json};

use crate::on_both_backends;
use crate::support::{Backend, Server, metric};

on_both_backends!(
    resource_version_table,
    pages_share_one_revision,
    past_revisions_from_the_cache,
    concurrent_patches_all_succeed,
    unchanged_update_keeps_the_revision
);

mod restart {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory_store_keeps_objects_and_revisions() {
        super::restart_keeps_objects_and_revisions().await;
    }
}

mod compaction {
    use crate::support::Backend;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn memory() {
        super::paging_across_compaction(Backend::Memory).await;
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn etcd() {
        super::paging_across_compaction(Backend::PrivateEtcd).await;
    }
}

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn rv(v: &Value) -> i64 {
    v["metadata"]["resourceVersion"].as_str().expect("a resourceVersion").parse().expect("numeric")
}

fn names(list: &Value) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_string()).collect()
}

async fn create(server: &Server, name: &str, data: &str) -> i64 {
    let (code, body) = server
        .post_json(CMS, &json!({"metadata": {"name": name, "labels": {"set": "table"}}, "data": {"v": data}}))
        .await;
    assert_eq!(code, 201, "{body}");
    rv(&body)
}

async fn list(server: &Server, query: &str) -> Value {
    let (code, body) = server.get(&format!("{CMS}?{query}")).await;
    assert_eq!(code, 200, "{query}: {body}");
    body
}

async fn resource_version_table(backend: Backend) {
    let server = Server::start("list-rv-table", backend, &[]).await;
    let r1 = create(&server, "a", "1").await;
    let r2 = create(&server, "b", "1").await;
    let (_, b) = server
        .send("PATCH", &format!("{CMS}/b"), "application/merge-patch+json", json!({"data": {"v": "2"}}).to_string())
        .await;
    let r3 = rv(&b);

    // Unset: the most recent state (consistent).
    let latest = list(&server, "").await;
    assert!(rv(&latest) >= r3);
    assert_eq!(names(&latest), ["a", "b"]);
    assert_eq!(latest["kind"], "ConfigMapList");
    assert!(latest["items"][0].get("kind").is_none(), "typed list items carry no kind");
    // "0": any state the server has, limit ignored (served from the cache).
    let any = list(&server, "resourceVersion=0&limit=1").await;
    assert_eq!(names(&any).len(), 2);
    assert!(any["metadata"].get("continue").is_none());
    // N without limit: not older than N.
    let not_older = list(&server, &format!("resourceVersion={r2}")).await;
    assert!(rv(&not_older) >= r2);
    // N with limit (legacy exact) and Exact: the state at exactly N.
    for query in [format!("resourceVersion={r2}&limit=10"), format!("resourceVersion={r2}&resourceVersionMatch=Exact")]
    {
        let exact = list(&server, &query).await;
        assert_eq!(rv(&exact), r2, "{query}");
        let b_at_r2 = exact["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == "b").unwrap();
        assert_eq!(b_at_r2["data"]["v"], "1", "{query}: b as it was at {r2}");
    }
    let at_r1 = list(&server, &format!("resourceVersion={r1}&resourceVersionMatch=Exact")).await;
    assert_eq!(names(&at_r1), ["a"]);
    // NotOlderThan.
    let not_older_than = list(&server, &format!("resourceVersion={r1}&resourceVersionMatch=NotOlderThan")).await;
    assert!(rv(&not_older_than) >= r3 || rv(&not_older_than) >= r1);

    // The invalid cells: 422 Invalid on ListOptions, or 400.
    for (query, code, fragment) in [
        (
            "resourceVersionMatch=Exact",
            422,
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            422,
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        ("resourceVersion=1&resourceVersionMatch=Sometimes", 422, "Unsupported value: \"Sometimes\""),
        ("sendInitialEvents=true", 422, "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"),
        ("resourceVersion=abc", 400, "invalid resource version"),
        ("limit=x", 400, "strconv.ParseInt: parsing \"x\": invalid syntax"),
    ] {
        let (got, body) = server.get(&format!("{CMS}?{query}")).await;
        assert_eq!(got, code, "{query}: {body}");
        assert!(body["message"].as_str().unwrap().contains(fragment), "{query}: {body}");
        if code == 422 {
            assert_eq!(body["details"]["kind"], "ListOptions");
            assert_eq!(body["details"]["group"], "meta.k8s.io");
            assert!(body["message"].as_str().unwrap().starts_with("ListOptions.meta.k8s.io \"\" is invalid: "));
        }
    }
    // A continue token with a resourceVersion, or with resourceVersionMatch.
    let page = list(&server, "limit=1").await;
    let token = page["metadata"]["continue"].as_str().unwrap().to_string();
    let (code, body) = server.get(&format!("{CMS}?limit=1&continue={token}&resourceVersion={r1}")).await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(body["message"], "specifying resource version is not allowed when using continue");
    let (code, _) = server
        .get(&format!("{CMS}?limit=1&continue={token}&resourceVersion={r1}&resourceVersionMatch=NotOlderThan"))
        .await;
    assert_eq!(code, 422);
    let (code, body) = server.get(&format!("{CMS}?limit=1&continue=garbage")).await;
    assert_eq!(code, 400, "{body}");
    assert!(body["message"].as_str().unwrap().starts_with("invalid continue token"));
}

async fn pages_share_one_revision(backend: Backend) {
    let server = Server::start("list-pages", backend, &[]).await;
    for i in 0..7 {
        create(&server, &format!("cm-{i:02}"), "x").await;
    }
    let mut seen = Vec::new();
    let mut query = "limit=3".to_string();
    let mut revision = None;
    let mut remaining = Vec::new();
    loop {
        let page = list(&server, &query).await;
        revision.get_or_insert(rv(&page));
        assert_eq!(Some(rv(&page)), revision, "every page at the same revision");
        // A write between pages does not show up in later pages.
        if seen.is_empty() {
            create(&server, "cm-zz-late", "x").await;
        }
        seen.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(token) if !token.is_empty() => {
                remaining.push(
                    page["metadata"]["remainingItemCount"].as_i64().expect("remainingItemCount while continuing"),
                );
                query = format!("limit=3&continue={token}");
            }
            _ => {
                assert!(page["metadata"].get("remainingItemCount").is_none());
                break;
            }
        }
    }
    assert_eq!(seen, (0..7).map(|i| format!("cm-{i:02}")).collect::<Vec<_>>());
    assert_eq!(remaining, [4, 1]);
    // With a selector there is no remainingItemCount.
    let filtered = list(&server, "limit=2&labelSelector=set%3Dtable").await;
    assert!(filtered["metadata"]["continue"].as_str().is_some());
    assert!(filtered["metadata"].get("remainingItemCount").is_none());
}

async fn update(server: &Server, name: &str, data: &str) -> i64 {
    let patch = json!({"data": {"v": data}}).to_string();
    let (code, body) = server.send("PATCH", &format!("{CMS}/{name}"), "application/merge-patch+json", patch).await;
    assert_eq!(code, 200, "{body}");
    rv(&body)
}

fn data(list: &Value) -> Vec<(String, String)> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["metadata"]["name"].as_str().unwrap().to_owned(), i["data"]["v"].as_str().unwrap().to_owned()))
        .collect()
}

/// Continue pages and exact LISTs read the cache's state at their revision (kube 1.33's
/// `ListFromCacheSnapshot`): what storage held then, with changes since undone, counted as LISTs
/// the cache served.
async fn past_revisions_from_the_cache(backend: Backend) {
    let server = Server::start("list-past-revisions", backend, &[]).await;
    for i in 0..7 {
        create(&server, &format!("cm-{i:02}"), "old").await;
    }
    let served = || metric(&server, "apiserver_cache_list_total", "resource_prefix=\"/configmaps\"");
    let before = served().await;
    let first = list(&server, "limit=3").await;
    let at = rv(&first);
    assert_eq!(names(&first), ["cm-00", "cm-01", "cm-02"]);
    // Every kind of change after the first page, to keys of the pages still to come.
    update(&server, "cm-03", "new").await;
    let (code, body) = server.send("DELETE", &format!("{CMS}/cm-04"), "application/json", "").await;
    assert_eq!(code, 200, "{body}");
    create(&server, "cm-04a", "new").await;
    update(&server, "cm-05", "new").await;
    let (code, body) = server.send("DELETE", &format!("{CMS}/cm-05"), "application/json", "").await;
    assert_eq!(code, 200, "{body}");
    create(&server, "cm-05", "newer").await;
    let mut pages = vec![first];
    while let Some(token) = pages.last().unwrap()["metadata"]["continue"].as_str().filter(|t| !t.is_empty()) {
        let page = list(&server, &format!("limit=3&continue={token}")).await;
        assert_eq!(rv(&page), at, "every page at the first page's revision");
        pages.push(page);
    }
    let seen: Vec<_> = pages.iter().flat_map(data).collect();
    let then: Vec<_> = (0..7).map(|i| (format!("cm-{i:02}"), "old".to_owned())).collect();
    assert_eq!(seen, then);
    assert_eq!(pages[1]["metadata"]["remainingItemCount"], 1);
    assert!(pages[2]["metadata"].get("remainingItemCount").is_none());
    // The same state by `Exact`, and by a resourceVersion with a limit (legacy exact).
    let exact = list(&server, &format!("resourceVersion={at}&resourceVersionMatch=Exact")).await;
    assert_eq!((rv(&exact), data(&exact)), (at, then.clone()));
    let legacy = list(&server, &format!("resourceVersion={at}&limit=10")).await;
    assert_eq!((rv(&legacy), data(&legacy)), (at, then));
    // Three pages and two exact LISTs, each served by the cache.
    assert_eq!(served().await - before, 5.0);
    // Today's state is not touched by reading the past.
    let now = list(&server, "").await;
    assert_eq!(names(&now), ["cm-00", "cm-01", "cm-02", "cm-03", "cm-04a", "cm-05", "cm-06"]);
}

async fn paging_across_compaction(backend: Backend) {
    let server = Server::start("list-paging-compaction", backend, &[]).await;
    for i in 0..5 {
        create(&server, &format!("p-{i}"), "x").await;
    }
    let first = list(&server, "limit=2").await;
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    // More writes, then compaction past the first page's revision.
    create(&server, "p-9", "x").await;
    server.debug("compact").await;
    let (code, expired) = server.get(&format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(code, 410, "{expired}");
    assert_eq!(expired["reason"], "Expired");
    assert!(
        expired["message"]
            .as_str()
            .unwrap()
            .starts_with("The provided continue parameter is too old to display a consistent list result.")
    );
    let inconsistent =
        expired["metadata"]["continue"].as_str().expect("a continue token for an inconsistent list").to_string();
    // The inconsistent continuation lists the rest, at a newer revision, including the new write.
    let rest = list(&server, &format!("limit=10&continue={inconsistent}")).await;
    assert!(rv(&rest) > rv(&first));
    assert_eq!(names(&rest), ["p-2", "p-3", "p-4", "p-9"]);
    // An exact list at the compacted revision is gone too.
    let (code, body) = server.get(&format!("{CMS}?resourceVersion={}&resourceVersionMatch=Exact", rv(&first))).await;
    assert_eq!(code, 410, "{body}");
    assert_eq!(body["message"], "The resourceVersion for the provided list is too old.");
}

async fn concurrent_patches_all_succeed(backend: Backend) {
    let server = Server::start("list-concurrent-patches", backend, &[]).await;
    create(&server, "target", "x").await;
    let patches = (0..20).map(|i| {
        let server = &server;
        async move {
            let patch = json!({"metadata": {"labels": {format!("l{i}"): "on"}}}).to_string();
            server.send("PATCH", &format!("{CMS}/target"), "application/merge-patch+json", patch).await
        }
    });
    for (code, body) in futures::future::join_all(patches).await {
        assert_eq!(code, 200, "{body}");
    }
    let (_, object) = server.get(&format!("{CMS}/target")).await;
    let labels = object["metadata"]["labels"].as_object().unwrap();
    assert_eq!(labels.len(), 21, "every patch landed: {labels:?}");
}

async fn unchanged_update_keeps_the_revision(backend: Backend) {
    let server = Server::start("list-noop-update", backend, &[]).await;
    let created = create(&server, "same", "x").await;
    let (code, body) = server
        .send("PATCH", &format!("{CMS}/same"), "application/merge-patch+json", json!({"data": {"v": "x"}}).to_string())
        .await;
    assert_eq!(code, 200);
    assert_eq!(rv(&body), created, "a patch that changes nothing writes nothing");
    // dryRun=All writes nothing either.
    let (code, body) = server
        .send(
            "PATCH",
            &format!("{CMS}/same?dryRun=All"),
            "application/merge-patch+json",
            json!({"data": {"v": "y"}}).to_string(),
        )
        .await;
    assert_eq!(code, 200);
    assert_eq!(body["data"]["v"], "y");
    assert_eq!(server.get(&format!("{CMS}/same")).await.1["data"]["v"], "x");
    let (code, _) = server.post_json(&format!("{CMS}?dryRun=All"), &json!({"metadata": {"name": "dry"}})).await;
    assert_eq!(code, 201);
    assert_eq!(server.get(&format!("{CMS}/dry")).await.0, 404);
}

async fn restart_keeps_objects_and_revisions() {
    let mut server = Server::start("list-restart", Backend::Memory, &[]).await;
    for i in 0..5 {
        create(&server, &format!("r{i}"), "x").await;
    }
    let before = list(&server, "").await;
    // SIGKILL: acknowledged writes are durable, and the revision counter continues.
    server.kill();
    server.restart().await;
    let after = list(&server, "").await;
    assert_eq!(after["items"], before["items"]);
    let next = create(&server, "r9", "x").await;
    assert!(next > rv(&before), "{next} after {}", rv(&before));
}

mod compactor {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compacts_to_the_revision_seen_one_interval_earlier() {
        super::compactor_compacts().await;
    }
}

/// kube-apiserver's compactor: every interval, compaction to the revision seen one interval
/// earlier (so about an interval of history always remains), coordinated through
/// `compact_rev_key`.
async fn compactor_compacts() {
    let dir = tempfile::tempdir().unwrap();
    let storage = vec!["--data-dir".to_string(), dir.path().join("data").display().to_string()];
    let server = Server::start_with_storage(dir, storage, None, &["--compaction-interval", "300ms"]).await;
    let early = create(&server, "old", "x").await;
    // Not compacted at once: the first round only records the revision.
    let (code, _) = server.get(&format!("{CMS}?resourceVersion={early}&resourceVersionMatch=Exact")).await;
    assert_eq!(code, 200);
    // Keep writing; within a few intervals the early revision is compacted away.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let mut i = 0;
    loop {
        create(&server, &format!("later-{i}"), "x").await;
        i += 1;
        let (code, body) = server.get(&format!("{CMS}?resourceVersion={early}&resourceVersionMatch=Exact")).await;
        if code == 410 {
            assert_eq!(body["message"], "The resourceVersion for the provided list is too old.");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the compactor never compacted");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
