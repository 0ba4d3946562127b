//! Admission: what kube-apiserver runs on a write after decoding and before storage, in kube's
//! order: mutating admission (webhooks that may patch the object), then the kind's own
//! validation (the registry's strategy), then validating admission (ValidatingAdmissionPolicies
//! in [`policies`], then webhooks that may only refuse), then the write. The namespace
//! lifecycle checks are in [`lifecycle`]; the webhooks of `MutatingWebhookConfiguration` and
//! `ValidatingWebhookConfiguration` objects in [`webhooks`]; what both match on in
//! [`criteria`] and how in [`matching`].
//!
//! A handler makes one [`Admission`] per request: who writes, what, where and how, and the
//! warnings webhooks return, which the handler sends as `Warning` headers. An update calls it
//! inside its guaranteed update, so a retried update is admitted again against the object it
//! now updates, as kube's `GuaranteedUpdate` does.

pub mod configurations;
mod criteria;
pub mod lifecycle;
mod matching;
pub mod policies;
mod request;
pub mod webhooks;

use listwatch_meta::ApiError;
use serde_json::{Map, Value};

pub use request::{Admission, Operation};

impl Admission<'_> {
    /// Mutating admission of the object `name` (empty for a generated name): `new` as the
    /// mutating webhooks leave it. `old` is the stored object of an update; a delete has
    /// neither.
    pub async fn mutate(
        &self,
        name: &str,
        old: Option<&Map<String, Value>>,
        new: Option<Map<String, Value>>,
    ) -> Result<Option<Map<String, Value>>, ApiError> {
        if self.exempt() {
            return Ok(new);
        }
        webhooks::mutate(self, name, old, new).await
    }

    /// Validating admission of the object `name` as it is about to be stored (`new`), or
    /// deleted (`old` only): the ValidatingAdmissionPolicies, then the validating webhooks, as
    /// kube orders its plugins.
    pub async fn validate(
        &self,
        name: &str,
        old: Option<&Map<String, Value>>,
        new: Option<&Map<String, Value>>,
    ) -> Result<(), ApiError> {
        if self.exempt() {
            return Ok(());
        }
        policies::validate(self, name, old, new).await?;
        webhooks::validate(self, name, old, new).await
    }

    /// Whether this write skips webhooks and policies: the admission configurations
    /// themselves (kube's rule, so that a broken webhook or policy cannot lock out its repair).
    fn exempt(&self) -> bool {
        self.resource.group == webhooks::configuration::GROUP
    }
}
