//! Runs that must pass: the correct run, 410s each rule excuses, watches from `"0"`, and what the
//! checker leaves unjudged rather than failing.

use listwatch_simulator::checker::Guarantee;
use listwatch_simulator::record::{CacheReset, ClientRecord, Delivery, EventKind, Known};

use crate::support::*;

#[test]
fn a_correct_run_passes() {
    let verdict = correct_run().check();
    assert_violations(&verdict, &[]);
    let summary: Vec<_> = verdict
        .clients
        .iter()
        .map(|client| (client.id.as_str(), client.watches, client.relists, client.converged))
        .collect();
    assert_eq!(summary, [("all", 2, 0, true), ("web", 1, 0, true), ("ns-a", 1, 0, true), ("y-only", 2, 1, true)]);
    assert!(verdict.clients.iter().all(|client| client.unchecked.is_empty() && client.first_difference.is_none()));
}

/// A client of `all`'s scope whose one watch, resumed at 8, gets a 410 at 60 ms.
fn gone_from_8(known: Known) -> Run {
    let log = log();
    let watch = Scope::default().watch(1, "8", vec![gone(60)]);
    let client = Scope::default().client("c", vec![], vec![watch], log.store(&[("a", "y"), ("a", "v"), ("b", "w")]));
    Run { log, clients: vec![client], known }
}

#[test]
fn a_410_beyond_the_cache_window_is_deserved() {
    // Five configmap writes (9, 10, 11, 12, 14) came after 8; the secret at 13 does not count.
    let run = gone_from_8(Known { window_capacity: 5, ..Known::default() });
    assert_violations(&run.check(), &[]);
    let run = gone_from_8(Known { window_capacity: 6, ..Known::default() });
    assert_violations(&run.check(), &[(Guarantee::Unjustified410, 1)]);
}

#[test]
fn a_410_below_a_cache_reset_of_the_resource_or_a_restart_is_deserved() {
    let reset = |resource: &str, at_ms| CacheReset { at_ms, resource: resource.into(), revision: 10 };
    for (resets, violations) in [
        (vec![reset("configmaps", 50)], 0),
        (vec![reset("", 50)], 0),
        (vec![reset("secrets", 50)], 1),
        // A watch from 8 is inside a cache that starts at 8.
        (vec![CacheReset { revision: 8, ..reset("configmaps", 50) }], 1),
        // After the error: it cannot have caused it.
        (vec![reset("configmaps", 70)], 1),
    ] {
        let run = gone_from_8(Known { cache_resets: resets.clone(), ..Known::default() });
        assert_violations(&run.check(), &[(Guarantee::Unjustified410, violations)]);
    }
}

#[test]
fn a_watch_from_0_is_judged_on_content_alone() {
    let log = log();
    // Synthetic ADDED events of the state at 12, in no order, then what follows.
    let deliveries = vec![
        log.initial("b", "w", 12),
        log.initial("a", "y", 12),
        log.initial("a", "v", 12),
        log.event(EventKind::Modified, 14),
        bookmark(14),
    ];
    let watch = Scope::default().watch(1, "0", deliveries);
    let store = log.store(&[("a", "y"), ("a", "v"), ("b", "w")]);
    let mut run =
        Run { clients: vec![Scope::default().client("c", vec![], vec![watch], store)], log, known: Known::default() };
    assert_violations(&run.check(), &[]);

    // The synthetic ADDED of a/y carrying content never written at its revision.
    let Some(Delivery::Event { fingerprint, .. }) = run.deliveries("c", 1).get_mut(1) else { unreachable!() };
    *fingerprint += 1;
    assert_violations(&run.check(), &[(Guarantee::Atomic, 1)]);
}

#[test]
fn a_watch_with_a_selector_that_does_not_parse_is_left_unjudged_and_said_so() {
    let mut run = correct_run();
    let client: &mut ClientRecord = run.client("web");
    client.watches[0].request.label_selector = Some("app in (".into());
    let verdict = run.check();
    assert_violations(&verdict, &[]);
    let web = verdict.clients.iter().find(|client| client.id == "web").unwrap();
    assert_eq!(web.unchecked.len(), 1, "{:?}", web.unchecked);
    assert!(web.unchecked[0].starts_with("watch 2: labelSelector \"app in (\" does not parse"), "{}", web.unchecked[0]);
}

#[test]
fn the_verdict_and_the_records_are_camel_case_json() {
    let run = correct_run();
    let verdict = serde_json::to_value(run.check()).unwrap();
    assert_eq!(verdict["passed"], true);
    let names: Vec<&str> = verdict["violations"].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "ordered",
            "unique",
            "atomic",
            "reliable",
            "resumable",
            "bookmarkable",
            "initialEventsEnd",
            "unjustified410",
            "converged"
        ]
    );
    assert_eq!(verdict["clients"][3]["relists"], 1);

    let clients = serde_json::to_string(&run.clients).unwrap();
    assert!(
        clients.contains(r#""type":"bookmark","atMs":140,"resourceVersion":14,"initialEventsEnd":false"#),
        "{clients}"
    );
    assert!(clients.contains(r#""end":{"kind":"broken","error":"unexpected EOF"}"#), "{clients}");
    assert!(clients.contains(r#""result":{"outcome":"ok","resourceVersion":3"#), "{clients}");
    let back: Vec<ClientRecord> = serde_json::from_str(&clients).unwrap();
    assert_eq!(back, run.clients);
    let history = serde_json::to_string(&run.log.events[..1]).unwrap();
    assert!(
        history.starts_with(r#"[{"revision":1,"kind":"put","created":true,"group":"","resource":"configmaps""#),
        "{history}"
    );
}
