//! Admission webhook outages (the debug API's `webhooks`): for a while, calls to every
//! admission webhook (or to one, by name) fail as a webhook that is down, slow or broken
//! would make them fail, without the webhook itself being touched. The webhook's failure
//! policy then decides, as in a cluster whose webhook Deployment is unavailable: `Fail`
//! refuses the writes it sees, `Ignore` lets them through.

use std::str::FromStr;
use std::time::Instant;

use parking_lot::Mutex;

/// How a webhook call fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebhookFailure {
    /// Nothing listens: `connect: connection refused`.
    Down,
    /// It never answers: the call times out (`context deadline exceeded`) after the
    /// webhook's `timeoutSeconds`.
    Slow,
    /// It answers 500.
    Error,
}

impl WebhookFailure {
    pub fn name(self) -> &'static str {
        match self {
            WebhookFailure::Down => "down",
            WebhookFailure::Slow => "slow",
            WebhookFailure::Error => "error",
        }
    }
}

impl FromStr for WebhookFailure {
    type Err = String;

    fn from_str(mode: &str) -> Result<WebhookFailure, String> {
        match mode {
            "down" => Ok(WebhookFailure::Down),
            "slow" => Ok(WebhookFailure::Slow),
            "error" => Ok(WebhookFailure::Error),
            other => Err(format!("mode must be down, slow or error, not {other:?}")),
        }
    }
}

struct Outage {
    /// The webhook (its name in its configuration); every webhook when `None`.
    webhook: Option<String>,
    failure: WebhookFailure,
    until: Instant,
}

/// The webhook outage in effect, if any.
#[derive(Default)]
pub struct WebhookFaults {
    outage: Mutex<Option<Outage>>,
}

impl WebhookFaults {
    /// Calls to `webhook` (or every webhook) fail as `failure` until `until`; a new outage
    /// replaces the one before.
    pub fn set(&self, webhook: Option<String>, failure: WebhookFailure, until: Instant) {
        *self.outage.lock() = Some(Outage { webhook, failure, until });
    }

    /// How a call to `webhook` made now fails, if it does.
    pub fn failure(&self, webhook: &str) -> Option<WebhookFailure> {
        let outage = self.outage.lock();
        let outage = outage.as_ref()?;
        let applies = Instant::now() < outage.until && outage.webhook.as_deref().is_none_or(|w| w == webhook);
        applies.then_some(outage.failure)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn an_outage_covers_its_webhook_for_its_time() {
        let faults = WebhookFaults::default();
        assert_eq!(faults.failure("a.example.com"), None);
        faults.set(Some("a.example.com".into()), WebhookFailure::Down, Instant::now() + Duration::from_secs(60));
        assert_eq!(faults.failure("a.example.com"), Some(WebhookFailure::Down));
        assert_eq!(faults.failure("b.example.com"), None);
        faults.set(None, WebhookFailure::Slow, Instant::now() + Duration::from_secs(60));
        assert_eq!(faults.failure("b.example.com"), Some(WebhookFailure::Slow));
        faults.set(None, WebhookFailure::Error, Instant::now());
        assert_eq!(faults.failure("b.example.com"), None);
        assert!("sideways".parse::<WebhookFailure>().is_err());
    }
}
