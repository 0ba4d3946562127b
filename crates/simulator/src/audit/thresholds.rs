//! How sensitive each rule is. The defaults give no finding for the clients this project
//! holds as correct (client-go's reflector as the spec describes it, kube-rs, the official
//! Python and JavaScript clients, kubectl, our reflector) under every shipped scenario; a
//! scenario tunes them in its `audit:` section, and a rule can be turned off there.

use std::time::Duration;

use serde::Deserialize;

use super::finding::Rule;

/// Every rule's threshold.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields, rename_all = "camelCase")]
pub struct Thresholds {
    /// Rules not to judge.
    pub off: Vec<Rule>,
    /// `410-loop`: a finding when, after a 410 for resourceVersion r, more than this many
    /// requests ask r or older again with no successful LIST in between (client-go asks once:
    /// a LIST at its last resourceVersion).
    pub gone_repeats: usize,
    /// `retry-after-ignored`: a finding when a request in the scope of a 429 comes before this
    /// fraction of its Retry-After has passed (kube-rs backs off 800 ms or more without reading
    /// the header; kube's Retry-After is 1 s).
    pub retry_after_fraction: f64,
    /// `hot-loop`: a finding when requests that follow an error answer come faster than this
    /// many per second ...
    pub hot_loop_per_second: f64,
    /// ... over this long.
    #[serde(with = "humantime_serde_compat")]
    pub hot_loop_window: Duration,
    /// `relist-storm`: LISTs a scope may have beyond one per cause (the first, and one after
    /// each error answer or stream end the server gave).
    pub relist_slack: usize,
    /// `stalled`: how long after its stream ended or went silent a running client may take to
    /// watch again. Longer than the clients' own timeouts (kube-rs reads for 295 s at most).
    #[serde(with = "humantime_serde_compat")]
    pub stall_deadline: Duration,
}

impl Default for Thresholds {
    fn default() -> Thresholds {
        Thresholds {
            off: Vec::new(),
            gone_repeats: 1,
            retry_after_fraction: 0.5,
            hot_loop_per_second: 5.0,
            hot_loop_window: Duration::from_secs(3),
            relist_slack: 2,
            stall_deadline: Duration::from_secs(330),
        }
    }
}

impl Thresholds {
    /// Whether `rule` is judged.
    pub fn judges(&self, rule: Rule) -> bool {
        !self.off.contains(&rule)
    }

    /// Why these thresholds cannot be used, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if !(self.retry_after_fraction > 0.0 && self.retry_after_fraction <= 1.0) {
            return Err(format!("retryAfterFraction must be in (0, 1], not {}", self.retry_after_fraction));
        }
        if !(self.hot_loop_per_second.is_finite() && self.hot_loop_per_second > 0.0) {
            return Err(format!("hotLoopPerSecond must be above 0, not {}", self.hot_loop_per_second));
        }
        if self.hot_loop_window.is_zero() {
            return Err("hotLoopWindow must be above 0".into());
        }
        Ok(())
    }
}

/// Durations as the scenario files write them (`3s`, `500ms`, `5m`), read by humantime.
mod humantime_serde_compat {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(deserializer)?;
        humantime::parse_duration(&text)
            .map_err(|_| serde::de::Error::custom(format!("{text:?} is not a duration such as 3s or 500ms")))
    }
}
