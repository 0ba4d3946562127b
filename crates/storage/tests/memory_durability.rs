//! The durable memory store survives `kill -9`: a child process (this test binary, re-run in
//! writer mode) writes as fast as it can and prints each acknowledged write; the parent kills it
//! mid-stream, reopens the data directory, and checks that every acknowledged write is there
//! at its revision and that the revision counter continued.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;

use bytes::Bytes;
use listwatch_storage::memory::{MemoryOptions, MemoryStore};
use listwatch_storage::{KeyRange, RangeRequest, Storage, StorageError};

const CHILD_ENV: &str = "LISTWATCH_DURABILITY_CHILD_DIR";

fn open(dir: &std::path::Path) -> MemoryStore {
    MemoryStore::open(MemoryOptions { data_dir: Some(dir.to_path_buf()), ..Default::default() }).unwrap()
}

/// Writer mode, not a test of its own: the parent re-executes this binary to run it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the writer process of acknowledged_writes_survive_kill_9, which runs it"]
async fn child_writer() {
    let dir = std::env::var(CHILD_ENV).expect("run by acknowledged_writes_survive_kill_9");
    let store = Arc::new(open(dir.as_ref()));
    // Eight concurrent writers so that group commit is exercised; each prints its acks.
    let mut tasks = Vec::new();
    for w in 0..8 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0.. {
                let key = format!("/k/{w}/{i}");
                let value = format!("value-{w}-{i}");
                let rev = store.create(key.as_bytes(), Bytes::from(value.clone())).await.unwrap().revision;
                // Overwrite every other key once, and delete every fifth, so the log holds
                // all three kinds of record.
                let rev = if i % 2 == 0 {
                    store.update(key.as_bytes(), Bytes::from(format!("{value}-updated")), rev).await.unwrap().revision
                } else {
                    rev
                };
                if i % 5 == 0 {
                    let d = store.delete(key.as_bytes(), Some(rev)).await.unwrap().revision;
                    println!("ACK DEL {key} {d}");
                } else {
                    println!("ACK PUT {key} {rev} {}", if i % 2 == 0 { format!("{value}-updated") } else { value });
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    // Round one: a store with some history and a compaction, cleanly written.
    let compacted = {
        let store = open(dir.path());
        let mut rev = store.create(b"/base", Bytes::from_static(b"0")).await.unwrap().revision;
        for i in 1..50 {
            rev = store.update(b"/base", Bytes::from(format!("{i}")), rev).await.unwrap().revision;
        }
        store.compact(rev - 10).await.unwrap();
        store.close();
        rev - 10
    };

    // Round two: a child writes until killed.
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["child_writer", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut acked = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(rest) = line.strip_prefix("ACK ") {
            acked.push(rest.to_string());
        }
        if acked.len() >= 3000 {
            break;
        }
    }
    // SIGKILL while the writers are still going.
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(acked.len() >= 3000);

    // Reopen: every acknowledged write is there, at its revision.
    let store = open(dir.path());
    let mut max_rev = 0;
    for ack in &acked {
        let parts: Vec<&str> = ack.splitn(4, ' ').collect();
        let (kind, key, rev) = (parts[0], parts[1], parts[2].parse::<i64>().unwrap());
        max_rev = max_rev.max(rev);
        let read = store.range(RangeRequest::new(KeyRange::key(key.to_string()))).await.unwrap();
        match kind {
            "PUT" => {
                let kv = read.kvs.first().unwrap_or_else(|| panic!("acknowledged {key} at {rev} is missing"));
                assert_eq!(kv.mod_revision, rev, "{key}");
                assert_eq!(kv.value, parts[3].as_bytes(), "{key}");
            }
            _ => assert!(read.kvs.is_empty(), "acknowledged delete of {key} at {rev} was lost"),
        }
    }
    // History and the compaction are back too.
    let current = store.current_revision().await.unwrap();
    assert!(current >= max_rev);
    assert_eq!(store.compacted_revision().await.unwrap(), compacted);
    let at = store.range(RangeRequest::new(KeyRange::key("/base")).at_revision(compacted)).await.unwrap();
    assert_eq!(at.kvs[0].mod_revision, compacted);
    assert!(matches!(
        store.range(RangeRequest::new(KeyRange::key("/base")).at_revision(compacted - 1)).await,
        Err(StorageError::Compacted { .. })
    ));
    // The counter continues: the next write gets the next revision.
    let next = store.create(b"/after-restart", Bytes::from_static(b"x")).await.unwrap().revision;
    assert_eq!(next, current + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_replace_the_log_and_restore_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let mut revs = Vec::new();
    for i in 0..200 {
        revs.push(store.create(format!("/s/{i:03}").as_bytes(), Bytes::from(format!("{i}"))).await.unwrap().revision);
    }
    for i in (0..200).step_by(3) {
        store.delete(format!("/s/{i:03}").as_bytes(), None).await.unwrap();
    }
    // Compaction writes a snapshot and starts a new segment.
    store.compact(revs[150]).await.unwrap();
    let last = store.create(b"/s/zzz", Bytes::from_static(b"last")).await.unwrap().revision;
    // Wait (bounded) for the snapshot writer to remove the old segment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        if names.iter().any(|n| n.ends_with(".snap")) && names.iter().filter(|n| n.ends_with(".log")).count() == 1 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no snapshot replaced the log: {names:?}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let before = store.range(RangeRequest::new(KeyRange::prefix("/s/"))).await.unwrap();
    let history_before = store.range(RangeRequest::new(KeyRange::prefix("/s/")).at_revision(revs[160])).await.unwrap();
    store.close();
    drop(store);

    let store = open(dir.path());
    let after = store.range(RangeRequest::new(KeyRange::prefix("/s/"))).await.unwrap();
    assert_eq!(after.kvs, before.kvs);
    assert_eq!(after.revision, last);
    let history_after = store.range(RangeRequest::new(KeyRange::prefix("/s/")).at_revision(revs[160])).await.unwrap();
    assert_eq!(history_after.kvs, history_before.kvs);
    // A watch from the compaction revision replays the same events as before the restart.
    let mut watch =
        store.watch(listwatch_storage::WatchRequest::new(KeyRange::prefix("/s/"), revs[150])).await.unwrap();
    let mut seen = 0;
    while let Some(Ok(listwatch_storage::WatchResponse::Events(events))) = watch.next().await {
        seen += events.len();
        if events.last().unwrap().revision() == last {
            break;
        }
    }
    assert_eq!(seen as i64, last - revs[150] + 1);
}
