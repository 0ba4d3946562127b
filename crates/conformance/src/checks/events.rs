//! Which events a watch delivers and in which order (spec §1.3, §2.3, §9.5; checklist
//! §11.3–§11.7). Every sequence ends with a sentinel write, so "exactly these events" is
//! checked by the next event being the sentinel's, never by waiting for silence.

use reqwest::Method;
use serde_json::json;

use crate::checks::expect::{Expected, expect_sequence};
use crate::fixture::{CHECK_LABEL, Fixture, read_until_added, rv};
use crate::watch::{EVENT_TIMEOUT, WatchEvent, WatchStream};
use crate::{CheckFailure, Target};

/// §11.3: create ⇒ ADDED, update ⇒ MODIFIED, delete ⇒ DELETED; the DELETED object is the last
/// state, stamped with the deletion's revision (newer than the last MODIFIED).
pub async fn event_types(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-event-types");
    let start = fx.current_rv().await?;
    let mut watch = fx.watch(&format!("resourceVersion={start}")).await?;
    let a = fx.create("a", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    let a3 = fx.update(&a2, "3").await?;
    fx.delete(&fx.name("a")).await?;
    let events = fx.until_sentinel(&mut watch, "sentinel", &[]).await?;
    if let [.., modified, deleted] = events.as_slice()
        && modified.kind == "MODIFIED"
        && deleted.kind == "DELETED"
    {
        if deleted.rv() <= modified.rv() {
            return Err(watch.failure(&format!(
                "the DELETED object must carry the deletion's resourceVersion, newer than the last MODIFIED's {}; it has {}",
                modified.rv(),
                deleted.rv()
            )));
        }
        if deleted.object["data"] != a3["data"] {
            return Err(watch.failure("the DELETED object must be the last state before the deletion"));
        }
    }
    expect_sequence(
        &watch,
        "create, update, update, delete",
        &events,
        &[
            Expected::new("ADDED", &a),
            Expected::new("MODIFIED", &a2),
            Expected::new("MODIFIED", &a3),
            Expected::deleted(fx.name("a")),
        ],
        start,
    )
}

/// §11.4: from RV R, exactly the changes after R (made before or after the watch started), in
/// RV order, and no synthetic ADDED for objects that already existed.
pub async fn from_resource_version(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-from-resource-version");
    let a = fx.create("a", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    let b = fx.create("b", "1").await?;
    let b2 = fx.update(&b, "2").await?;
    fx.delete(&fx.name("a")).await?;
    let start = rv(&a2);
    let mut watch = fx.watch(&format!("resourceVersion={start}")).await?;
    let b3 = fx.update(&b2, "3").await?;
    let events = fx.until_sentinel(&mut watch, "sentinel", &[]).await?;
    expect_sequence(
        &watch,
        &format!("changes after resourceVersion {start}"),
        &events,
        &[
            Expected::new("ADDED", &b),
            Expected::new("MODIFIED", &b2),
            Expected::deleted(fx.name("a")),
            Expected::new("MODIFIED", &b3),
        ],
        start,
    )
}

/// Reads `count` events (no bookmarks were asked for).
async fn take(watch: &mut WatchStream, count: usize) -> Result<Vec<WatchEvent>, CheckFailure> {
    let mut events = Vec::with_capacity(count);
    for _ in 0..count {
        events.push(watch.next_event(EVENT_TIMEOUT).await?);
    }
    Ok(events)
}

/// §11.5: a watch dropped after some events and restarted from the last RV seen (a DELETED's,
/// then an ADDED's) continues exactly where it left off, including the changes made while no
/// watch was open.
pub async fn restart_from_last_seen(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-restart-from-last-seen");
    let start = fx.current_rv().await?;
    let mut first = fx.watch(&format!("resourceVersion={start}")).await?;
    let a = fx.create("a", "1").await?;
    let b = fx.create("b", "1").await?;
    let a2 = fx.update(&a, "2").await?;
    fx.delete(&fx.name("b")).await?;
    let a3 = fx.update(&a2, "3").await?;
    let c = fx.create("c", "1").await?;
    let seen = take(&mut first, 4).await?;
    expect_sequence(
        &first,
        "the first watch",
        &seen,
        &[
            Expected::new("ADDED", &a),
            Expected::new("ADDED", &b),
            Expected::new("MODIFIED", &a2),
            Expected::deleted(fx.name("b")),
        ],
        start,
    )?;
    drop(first);
    let a4 = fx.update(&a3, "4").await?;
    let c2 = fx.update(&c, "2").await?;

    let resume = seen[3].rv();
    let mut second = fx.watch(&format!("resourceVersion={resume}")).await?;
    let seen = take(&mut second, 2).await?;
    expect_sequence(
        &second,
        &format!("restarted from the DELETED's resourceVersion {resume}"),
        &seen,
        &[Expected::new("MODIFIED", &a3), Expected::new("ADDED", &c)],
        resume,
    )?;
    drop(second);
    let d = fx.create("d", "1").await?;

    let resume = seen[1].rv();
    let mut third = fx.watch(&format!("resourceVersion={resume}")).await?;
    let events = fx.until_sentinel(&mut third, "sentinel", &[]).await?;
    expect_sequence(
        &third,
        &format!("restarted from the ADDED's resourceVersion {resume}"),
        &events,
        &[Expected::new("MODIFIED", &a4), Expected::new("MODIFIED", &c2), Expected::new("ADDED", &d)],
        resume,
    )
}

/// §11.6 / §2.3: with a label selector, an update that starts matching is ADDED, one that keeps
/// matching MODIFIED, one that stops matching DELETED carrying the previous object at the
/// update's RV, and one that matches neither before nor after gives nothing.
pub async fn label_selector_transitions(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-label-selector-transitions");
    let x = fx.create_labelled("x", &[("tier", "a")], "1").await?;
    let start = rv(&x);
    let mut watch = fx.watch_selecting("tier=b", &format!("resourceVersion={start}")).await?;
    let x1 = fx.relabel(&x, &[("tier", "b")]).await?;
    let x2 = fx.update(&x1, "2").await?;
    let x3 = fx.relabel(&x2, &[("tier", "c")]).await?;
    fx.relabel(&x3, &[("tier", "d")]).await?;
    let events = fx.until_sentinel(&mut watch, "sentinel", &[("tier", "b")]).await?;
    expect_sequence(
        &watch,
        "tier a→b→b (data)→c→d under selector tier=b",
        &events,
        &[
            Expected::new("ADDED", &x1),
            Expected::new("MODIFIED", &x2),
            // Stopping to match: the update's revision, the object as it was before.
            Expected { kind: "DELETED", name: fx.name("x"), rv: Some(rv(&x3)) },
        ],
        start,
    )?;
    let deleted = &events[2].object;
    if deleted["metadata"]["labels"]["tier"] != "b" || deleted["data"] != x2["data"] {
        return Err(CheckFailure::failed_with(
            "the DELETED of an object that stopped matching must carry the previous object (labels tier=b, data of the last MODIFIED)",
            events[2].line.clone(),
        ));
    }
    if events[0].object["metadata"]["labels"]["tier"] != "b" {
        return Err(CheckFailure::failed_with(
            "the ADDED of an object that started matching must carry the new object",
            events[0].line.clone(),
        ));
    }
    Ok(())
}

/// §11.7: watches started at the same RV see identical sequences (types, names, RVs, bytes of
/// the objects aside).
pub async fn concurrent_watches(target: &Target) -> Result<(), CheckFailure> {
    const WATCHES: usize = 10;
    let fx = Fixture::new(target, "watch-concurrent-same-order");
    let start = fx.current_rv().await?;
    let query = format!("resourceVersion={start}");
    let opened = futures::future::join_all((0..WATCHES).map(|_| fx.watch(&query))).await;
    let mut watches = opened.into_iter().collect::<Result<Vec<_>, _>>()?;

    let mut expected = Vec::new();
    let mut objects = Vec::new();
    for i in 0..4 {
        let object = fx.create(&format!("o{i}"), "1").await?;
        expected.push(Expected::new("ADDED", &object));
        objects.push(object);
    }
    for round in 2..4 {
        for object in objects.iter_mut() {
            *object = fx.update(object, &round.to_string()).await?;
            expected.push(Expected::new("MODIFIED", object));
        }
    }
    for i in [1, 3] {
        fx.delete(&fx.name(&format!("o{i}"))).await?;
        expected.push(Expected::deleted(fx.name(&format!("o{i}"))));
    }
    let sentinel = fx.create("sentinel", "sentinel").await?;
    let sequences = futures::future::join_all(watches.iter_mut().map(|w| read_until_added(w, &sentinel))).await;
    let sequences = sequences.into_iter().collect::<Result<Vec<_>, _>>()?;
    expect_sequence(&watches[0], "watch 0", &sequences[0], &expected, start)?;
    let briefs = |events: &[WatchEvent]| events.iter().map(WatchEvent::brief).collect::<Vec<_>>();
    let reference = briefs(&sequences[0]);
    for (i, sequence) in sequences.iter().enumerate().skip(1) {
        if briefs(sequence) != reference {
            return Err(CheckFailure::failed_with(
                format!("watch {i} saw a different sequence than watch 0 (both from resourceVersion {start})"),
                format!("watch 0: {}\nwatch {i}: {}", reference.join(", "), briefs(sequence).join(", ")),
            ));
        }
    }
    Ok(())
}

/// §1.1: a watch on `…/namespaces/{ns}/<resource>` sees only that namespace, both for
/// changes it is live for and for changes it replays from a resourceVersion, even when another
/// namespace has an object of the same name and labels.
pub async fn namespace_scoped(target: &Target) -> Result<(), CheckFailure> {
    let fx = Fixture::new(target, "watch-namespace-scoped");
    let other = format!("{}-other", target.namespace);
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}});
    target.send(Method::POST, "/api/v1/namespaces", Some(&namespace)).await?.expect(201)?;
    let result = namespace_scoped_in(&fx, &other).await;
    // Best effort: a leftover namespace is not this check's verdict.
    let _ = target.send(Method::DELETE, &target.resource.collection(&other), None).await;
    let _ = target.send(Method::DELETE, &format!("/api/v1/namespaces/{other}"), None).await;
    result
}

async fn namespace_scoped_in(fx: &Fixture<'_>, other: &str) -> Result<(), CheckFailure> {
    let target = fx.target;
    let start = fx.current_rv().await?;
    let mut live = fx.watch(&format!("resourceVersion={start}")).await?;
    // The twin: same name, same labels, the other namespace; written before and after ours.
    let labels = json!({CHECK_LABEL: fx.check}).as_object().cloned().unwrap_or_default();
    let twin = target.resource.object(&fx.name("x"), None, labels, json!({"value": "twin"}));
    let twin_path = target.resource.collection(other);
    target.send(Method::POST, &twin_path, Some(&twin)).await?.expect(201)?;
    let x = fx.create("x", "1").await?;
    let mut twin2 = twin.clone();
    twin2["metadata"]["name"] = json!(fx.name("y"));
    target.send(Method::POST, &twin_path, Some(&twin2)).await?.expect(201)?;
    let sentinel = fx.create("sentinel", "sentinel").await?;

    // Opened after every write: all it delivers comes from the server's history.
    let mut replay = fx.watch(&format!("resourceVersion={start}")).await?;
    for (watch, what) in [(&mut live, "a watch open during the writes"), (&mut replay, "a watch replaying them")] {
        let events = read_until_added(watch, &sentinel).await?;
        if let Some(stray) = events.iter().find(|e| e.object["metadata"]["namespace"] != target.namespace.as_str()) {
            return Err(CheckFailure::failed_with(
                format!(
                    "GET {}: {what} delivered an event of namespace {} (only {} was watched)",
                    watch.path, stray.object["metadata"]["namespace"], target.namespace
                ),
                stray.line.clone(),
            ));
        }
        expect_sequence(watch, what, &events, &[Expected::new("ADDED", &x)], start)?;
    }
    Ok(())
}
