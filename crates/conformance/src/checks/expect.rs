//! What a check expects a watch to deliver ([`Expected`]) and the one comparison every check
//! makes of it ([`expect_sequence`], [`expect_events`]).

use crate::CheckFailure;
use crate::watch::{WatchEvent, WatchStream};

/// An event a check expects: type, object name, and resourceVersion when known (a DELETE's
/// revision is only learned from its event).
#[derive(Clone, Debug)]
pub(crate) struct Expected {
    pub kind: &'static str,
    pub name: String,
    pub rv: Option<i64>,
}

impl Expected {
    pub fn new(kind: &'static str, object: &serde_json::Value) -> Expected {
        Expected {
            kind,
            name: object["metadata"]["name"].as_str().unwrap_or_default().to_string(),
            rv: Some(crate::fixture::rv(object)),
        }
    }

    pub fn deleted(name: String) -> Expected {
        Expected { kind: "DELETED", name, rv: None }
    }

    fn brief(&self) -> String {
        match self.rv {
            Some(rv) => format!("{} {}@{rv}", self.kind, self.name),
            None => format!("{} {}@?", self.kind, self.name),
        }
    }
}

/// Compares what a watch delivered with what the check expects: same types and names in the
/// same order, known resourceVersions equal, and resourceVersions strictly increasing and
/// greater than `after` (the watch's start).
pub(crate) fn expect_sequence(
    watch: &WatchStream,
    what: &str,
    got: &[WatchEvent],
    expected: &[Expected],
    after: i64,
) -> Result<(), CheckFailure> {
    expect_events(&format!("GET {}", watch.path), &watch.transcript(), what, got, expected, after)
}

/// [`expect_sequence`] for events from any transport: `request` names it in the failure and
/// `transcript` is what was received.
pub(crate) fn expect_events(
    request: &str,
    transcript: &str,
    what: &str,
    got: &[WatchEvent],
    expected: &[Expected],
    after: i64,
) -> Result<(), CheckFailure> {
    let show = || {
        format!(
            "expected: [{}]\ngot:      [{}]",
            expected.iter().map(Expected::brief).collect::<Vec<_>>().join(", "),
            got.iter().map(WatchEvent::brief).collect::<Vec<_>>().join(", ")
        )
    };
    let fail = |why: String| {
        CheckFailure::failed_with(format!("{request}: {what}: {why}"), format!("{}\n{transcript}", show()))
    };
    if got.len() != expected.len() {
        return Err(fail(format!("expected {} events, got {}", expected.len(), got.len())));
    }
    let mut last = after;
    for (i, (event, want)) in got.iter().zip(expected).enumerate() {
        if event.kind != want.kind || event.name() != want.name {
            return Err(fail(format!("event {i} is {}, expected {}", event.brief(), want.brief())));
        }
        if let Some(rv) = want.rv
            && event.rv() != rv
        {
            return Err(fail(format!("event {i} has resourceVersion {}, the write's was {rv}", event.rv())));
        }
        if event.rv() <= last {
            return Err(fail(format!(
                "event {i} ({}) has resourceVersion {} which is not greater than {last}",
                event.brief(),
                event.rv()
            )));
        }
        last = event.rv();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, name: &str, rv: i64) -> WatchEvent {
        let object = serde_json::json!({"metadata": {"name": name, "resourceVersion": rv.to_string()}});
        WatchEvent { kind: kind.into(), line: object.to_string(), object }
    }

    fn expected(kind: &'static str, name: &str, rv: Option<i64>) -> Expected {
        Expected { kind, name: name.into(), rv }
    }

    #[test]
    fn sequences_must_match_exactly() {
        let watch = WatchStream::empty_for_tests();
        let want = [expected("ADDED", "a", Some(5)), expected("DELETED", "a", None)];
        let check = |got: &[WatchEvent]| expect_sequence(&watch, "t", got, &want, 4);
        assert!(check(&[event("ADDED", "a", 5), event("DELETED", "a", 9)]).is_ok());
        // Missing, extra, reordered, wrong type, wrong RV, RV not increasing, RV not after the start.
        assert!(check(&[event("ADDED", "a", 5)]).is_err());
        assert!(check(&[event("ADDED", "a", 5), event("DELETED", "a", 9), event("DELETED", "a", 10)]).is_err());
        assert!(check(&[event("DELETED", "a", 9), event("ADDED", "a", 5)]).is_err());
        assert!(check(&[event("MODIFIED", "a", 5), event("DELETED", "a", 9)]).is_err());
        assert!(check(&[event("ADDED", "a", 6), event("DELETED", "a", 9)]).is_err());
        assert!(check(&[event("ADDED", "a", 5), event("DELETED", "a", 5)]).is_err());
        let early = [expected("ADDED", "a", None)];
        assert!(expect_sequence(&watch, "t", &[event("ADDED", "a", 4)], &early, 4).is_err());
    }
}
