//! One planted fault per test, in the correct run, and the exact counts the checker must report:
//! the guarantee the fault breaks, and only the others it really breaks too.
//!
//! Positions in the correct run's watches (see `support::correct_run`):
//! * `all` watch 2 (from 3): M4 M5 M6 D7 A8 bookmark 8;
//! * `all` watch 3 (from 8): M9 D10 M11 A12 M14 bookmark 14;
//! * `web` watch 2 (from 1): A3 M4 A5 D6 D7 A8 bookmark 8, M9 M11 bookmark 12, M14;
//! * `ns-a` watch 1 (streaming): initial y x, end at 5, M6 M9 D10 A12 bookmark 13, M14.

use listwatch_simulator::checker::{DETAILS_PER_GUARANTEE, Guarantee};
use listwatch_simulator::record::{Delivery, EventKind, Known};

use crate::support::*;

use Guarantee::*;

fn fingerprint(delivery: &mut Delivery) -> &mut u64 {
    match delivery {
        Delivery::Event { fingerprint, .. } => fingerprint,
        other => panic!("not an event: {other:?}"),
    }
}

#[test]
fn a_skipped_event_is_unreliable() {
    let mut run = correct_run();
    run.deliveries("all", 3).remove(1); // D10
    assert_violations(&run.check(), &[(Reliable, 1)]);
}

#[test]
fn a_skipped_event_the_store_kept_is_unreliable_and_unconverged() {
    let mut run = correct_run();
    run.deliveries("all", 3).remove(2); // M11: the store keeps w as written at 8
    let stale = run.log.object("b", "w", 8);
    let store = &mut run.client("all").final_store;
    store.retain(|object| object.name != "w");
    store.push(stale);
    let verdict = run.check();
    assert_violations(&verdict, &[(Reliable, 1), (Converged, 1)]);
    let all = &verdict.clients[0];
    assert!(!all.converged);
    assert_eq!(
        all.first_difference.as_deref(),
        Some("b/w differs: rv 8 (LIST: 11), fingerprint 0xf008 (LIST: 0xf00b)")
    );
}

#[test]
fn an_event_a_bookmark_passed_and_that_never_came_is_unreliable_only() {
    // The bookmark at 14 claims M14 was delivered; the fault is counted once, as the lost event.
    let mut run = correct_run();
    run.deliveries("all", 3).remove(4); // M14, which the store still reflects
    assert_violations(&run.check(), &[(Reliable, 1)]);
}

#[test]
fn a_duplicated_event_is_not_unique() {
    let mut run = correct_run();
    let deliveries = run.deliveries("all", 3);
    deliveries.insert(2, deliveries[1].clone()); // D10 twice
    assert_violations(&run.check(), &[(Unique, 1)]);
}

#[test]
fn a_second_event_at_one_revision_is_not_unique() {
    // Kubernetes writes one key per revision, so two events at 9 repeat the revision.
    let mut run = correct_run();
    let deliveries = run.deliveries("all", 3);
    let mut other_key = deliveries[0].clone();
    if let Delivery::Event { namespace, name, .. } = &mut other_key {
        (*namespace, *name) = ("b".into(), "w".into());
    }
    deliveries.insert(1, other_key);
    assert_violations(&run.check(), &[(Unique, 1)]);
}

#[test]
fn events_out_of_order_are_not_ordered() {
    let mut run = correct_run();
    run.deliveries("all", 3).swap(2, 3); // A12 before M11
    assert_violations(&run.check(), &[(Ordered, 1)]);
}

#[test]
fn an_event_with_content_never_written_at_its_revision_is_not_atomic() {
    let mut run = correct_run();
    *fingerprint(&mut run.deliveries("all", 3)[0]) += 1; // M9
    assert_violations(&run.check(), &[(Atomic, 1)]);
}

#[test]
fn an_object_entering_a_selector_as_modified_is_not_atomic() {
    let mut run = correct_run();
    let modified = run.log.event(EventKind::Modified, 5); // y enters app=web: ADDED
    run.deliveries("web", 2)[2] = modified;
    assert_violations(&run.check(), &[(Atomic, 1)]);
}

#[test]
fn an_object_leaving_a_selector_deleted_with_its_new_state_is_not_atomic() {
    // Kubernetes sends the state before the update, which was in the selector.
    let mut run = correct_run();
    let deleted = run.log.event(EventKind::Deleted, 6);
    run.deliveries("web", 2)[3] = deleted;
    assert_violations(&run.check(), &[(Atomic, 1)]);
}

#[test]
fn an_event_outside_the_watch_scope_is_not_atomic() {
    // The secret written at 13, delivered to a configmap watch in its place.
    let mut run = correct_run();
    let mut secret = run.log.event(EventKind::Added, 12);
    if let Delivery::Event { name, resource_version, .. } = &mut secret {
        *name = "s".into();
        *resource_version = 13;
    }
    run.deliveries("all", 3).insert(4, secret);
    assert_violations(&run.check(), &[(Atomic, 1)]);
}

#[test]
fn a_watch_resumed_from_the_wrong_revision_is_not_resumable() {
    // Resumed at 8, it starts with A8 again: the off-by-one resume.
    let mut run = correct_run();
    let again = run.log.event(EventKind::Added, 8);
    run.deliveries("all", 3).insert(0, again);
    assert_violations(&run.check(), &[(Resumable, 1)]);
}

#[test]
fn a_resumed_watch_that_skips_its_first_event_is_neither_resumable_nor_reliable() {
    let mut run = correct_run();
    run.deliveries("all", 3).remove(0); // M9
    assert_violations(&run.check(), &[(Resumable, 1), (Reliable, 1)]);
}

#[test]
fn a_bookmark_ahead_of_an_undelivered_event_is_not_bookmarkable() {
    let mut run = correct_run();
    run.deliveries("web", 2).swap(8, 9); // bookmark 12 before M11
    assert_violations(&run.check(), &[(Bookmarkable, 1)]);
}

#[test]
fn an_event_at_a_bookmark_revision_after_the_bookmark_is_not_bookmarkable() {
    let mut run = correct_run();
    let deliveries = run.deliveries("web", 2);
    deliveries[9] = bookmark(11);
    deliveries.swap(8, 9); // bookmark 11 before M11
    assert_violations(&run.check(), &[(Bookmarkable, 1)]);
}

#[test]
fn a_bookmark_behind_an_event_is_not_bookmarkable() {
    let mut run = correct_run();
    run.deliveries("all", 2)[5] = bookmark(7); // after A8
    assert_violations(&run.check(), &[(Bookmarkable, 1)]);
}

#[test]
fn a_bookmark_going_back_is_not_bookmarkable() {
    let mut run = correct_run();
    let deliveries = run.deliveries("web", 2);
    deliveries.insert(8, bookmark(10)); // after M9
    deliveries.insert(9, bookmark(9));
    assert_violations(&run.check(), &[(Bookmarkable, 1)]);
}

#[test]
fn a_410_with_no_compaction_reset_or_window_behind_it_is_unjustified() {
    let mut run = correct_run();
    run.known = Known { window_capacity: 100, ..Known::default() };
    let verdict = run.check();
    assert_violations(&verdict, &[(Unjustified410, 1)]);
    let y_only = &verdict.clients[3];
    assert_eq!(y_only.violations[0].watch_seq, Some(2));
    assert!(y_only.violations[0].detail.contains("never compacted"), "{}", y_only.violations[0].detail);
}

#[test]
fn a_410_before_the_compaction_that_would_explain_it_is_unjustified() {
    let mut run = correct_run();
    run.known.compactions[0].at_ms = 102;
    assert_violations(&run.check(), &[(Unjustified410, 1)]);
}

#[test]
fn a_410_to_a_watch_at_the_compacted_revision_is_unjustified() {
    // Compacted to 2, the watch from 2 needs only 3 onwards, which is still there.
    let mut run = correct_run();
    run.known.compactions[0].revision = 2;
    assert_violations(&run.check(), &[(Unjustified410, 1)]);
}

#[test]
fn a_410_to_a_watch_above_the_compaction_is_unjustified() {
    // The watch from 9 is above the compaction to 6.
    let mut run = correct_run();
    run.deliveries("y-only", 4).push(gone(200));
    assert_violations(&run.check(), &[(Unjustified410, 1)]);
}

#[test]
fn a_final_store_missing_an_object_has_not_converged() {
    let mut run = correct_run();
    run.client("ns-a").final_store.retain(|object| object.name != "v");
    let verdict = run.check();
    assert_violations(&verdict, &[(Converged, 1)]);
    let namespace_a = &verdict.clients[2];
    assert_eq!(namespace_a.first_difference.as_deref(), Some("a/v (rv 12) is missing from the store"));
    assert_eq!(namespace_a.violations[0].watch_seq, None);
}

#[test]
fn a_final_store_with_an_object_outside_the_scope_has_not_converged() {
    let mut run = correct_run();
    let outside = run.log.object("b", "w", 14);
    run.client("ns-a").final_store.push(outside);
    assert_violations(&run.check(), &[(Converged, 1)]);
}

#[test]
fn a_streaming_list_without_its_end_bookmark_breaks_initial_events_end() {
    let mut run = correct_run();
    run.deliveries("ns-a", 1).remove(2);
    assert_violations(&run.check(), &[(InitialEventsEnd, 1)]);
}

#[test]
fn a_second_end_bookmark_breaks_initial_events_end() {
    let mut run = correct_run();
    run.deliveries("ns-a", 1).push(initial_events_end(14));
    assert_violations(&run.check(), &[(InitialEventsEnd, 1)]);
}

#[test]
fn an_end_bookmark_below_the_revision_asked_for_breaks_initial_events_end() {
    let mut run = correct_run();
    run.client("ns-a").watches[0].request.resource_version = "6".into();
    assert_violations(&run.check(), &[(InitialEventsEnd, 1)]);
}

#[test]
fn initial_events_missing_an_object_are_unreliable() {
    let mut run = correct_run();
    run.deliveries("ns-a", 1).remove(1); // x
    assert_violations(&run.check(), &[(Reliable, 1)]);
}

#[test]
fn initial_events_with_a_stale_object_are_not_atomic() {
    let mut run = correct_run();
    let stale = run.log.initial("a", "y", 2); // as written at 2, not 5
    run.deliveries("ns-a", 1)[0] = stale;
    assert_violations(&run.check(), &[(Atomic, 1)]);
}

#[test]
fn every_violation_is_counted_but_only_the_first_few_are_described() {
    let mut run = correct_run();
    let mut deliveries = Vec::new();
    for _ in 0..30 {
        deliveries.extend(run.deliveries("all", 3).iter().take(1).cloned()); // M9, 30 times
    }
    *run.deliveries("all", 3) = deliveries;
    let verdict = run.check();
    // 29 repeats; the watch got no further than 9, so nothing after it is owed.
    assert_violations(&verdict, &[(Unique, 29)]);
    assert_eq!(verdict.clients[0].violation_counts[&Unique], 29);
    assert_eq!(verdict.clients[0].violations.len(), DETAILS_PER_GUARANTEE);
}
