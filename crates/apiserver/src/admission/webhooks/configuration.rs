//! The webhook configurations as the webhooks read them: each configuration's webhooks parsed
//! once (selectors included), in kube's calling order, and cached until either configuration
//! kind's watch cache moves. Also where `serve --webhook-service` says a Service is reached.

use std::sync::Arc;
use std::time::Duration;

use listwatch_meta::Object;
use listwatch_meta::selector::LabelSelector;
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::Value;

use crate::registry::ResourceStore;

/// The group of webhook configurations.
pub const GROUP: &str = "admissionregistration.k8s.io";
pub(super) const MUTATING: &str = "mutatingwebhookconfigurations";
pub(super) const VALIDATING: &str = "validatingwebhookconfigurations";

/// One webhook of a configuration, as written (after defaulting).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct WebhookSpec {
    pub(super) name: String,
    #[serde(default)]
    pub(super) client_config: ClientConfig,
    #[serde(default)]
    pub(super) rules: Vec<Rule>,
    #[serde(default)]
    pub(super) failure_policy: Option<String>,
    #[serde(default)]
    pub(super) namespace_selector: Option<Value>,
    #[serde(default)]
    pub(super) object_selector: Option<Value>,
    #[serde(default)]
    pub(super) side_effects: Option<String>,
    #[serde(default)]
    pub(super) timeout_seconds: Option<u64>,
    #[serde(default)]
    pub(super) reinvocation_policy: Option<String>,
}

/// How a webhook is reached.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ClientConfig {
    pub(super) url: Option<String>,
    pub(super) service: Option<ServiceReference>,
    /// Base64 of PEM certificates (JSON carries `[]byte` as base64).
    pub(super) ca_bundle: Option<String>,
}

#[derive(Clone, Debug, Deserialize)]
pub(super) struct ServiceReference {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) path: Option<String>,
    pub(super) port: Option<u16>,
}

/// `RuleWithOperations`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Rule {
    #[serde(default)]
    pub(super) operations: Vec<String>,
    #[serde(default)]
    pub(super) api_groups: Vec<String>,
    #[serde(default)]
    pub(super) api_versions: Vec<String>,
    #[serde(default)]
    pub(super) resources: Vec<String>,
    pub(super) scope: Option<String>,
}

/// A webhook ready to be matched and called.
#[derive(Debug)]
pub(super) struct Webhook {
    pub(super) spec: WebhookSpec,
    pub(super) namespace_selector: Option<LabelSelector>,
    pub(super) object_selector: Option<LabelSelector>,
    /// `Err` holds why the selector does not parse (the call then fails, as kube's does).
    pub(super) selector_error: Option<String>,
}

impl Webhook {
    pub(super) fn parse(value: &Value) -> Option<Webhook> {
        let spec: WebhookSpec = serde_json::from_value(value.clone()).ok()?;
        let mut selector_error = None;
        let mut selector = |v: &Option<Value>| match v {
            None => None,
            Some(v) => {
                let parsed = LabelSelector::from_api(v);
                if parsed.is_none() {
                    selector_error = Some(format!("invalid label selector {v}"));
                }
                parsed
            }
        };
        let namespace_selector = selector(&spec.namespace_selector);
        let object_selector = selector(&spec.object_selector);
        Some(Webhook { spec, namespace_selector, object_selector, selector_error })
    }

    pub(super) fn ignores_failures(&self) -> bool {
        self.spec.failure_policy.as_deref() == Some("Ignore")
    }

    pub(super) fn timeout(&self) -> Duration {
        Duration::from_secs(self.spec.timeout_seconds.unwrap_or(10).clamp(1, 30))
    }

    /// Whether a dry run may call it (`sideEffects` None or NoneOnDryRun).
    pub(super) fn safe_on_dry_run(&self) -> bool {
        matches!(self.spec.side_effects.as_deref(), Some("None" | "NoneOnDryRun"))
    }

    pub(super) fn reinvoked_if_needed(&self) -> bool {
        self.spec.reinvocation_policy.as_deref() == Some("IfNeeded")
    }
}

/// Every registered webhook, mutating and validating, in the order kube calls them.
#[derive(Debug, Default)]
pub struct Hooks {
    pub(super) mutating: Vec<Arc<Webhook>>,
    pub(super) validating: Vec<Arc<Webhook>>,
}

impl Hooks {
    pub(super) fn from_configurations(mutating: &[Arc<Object>], validating: &[Arc<Object>]) -> Hooks {
        let hooks = |configurations: &[Arc<Object>]| {
            let mut sorted: Vec<&Arc<Object>> = configurations.iter().collect();
            sorted.sort_by(|a, b| a.name().cmp(b.name()));
            sorted
                .into_iter()
                .flat_map(|c| c.value().get("webhooks").and_then(Value::as_array).cloned().unwrap_or_default())
                .filter_map(|w| Webhook::parse(&w).map(Arc::new))
                .collect()
        };
        Hooks { mutating: hooks(mutating), validating: hooks(validating) }
    }
}

/// The webhooks as the caches hold them, parsed once per change of either configuration kind.
#[derive(Default)]
pub struct HookCache {
    pub(super) current: Mutex<Option<([i64; 2], Arc<Hooks>)>>,
}

impl HookCache {
    /// The webhooks of the mutating and the validating configurations' stores, in that order.
    pub(super) async fn get(&self, stores: [Option<Arc<ResourceStore>>; 2]) -> Arc<Hooks> {
        let caches: Option<Vec<_>> =
            stores.iter().map(|s| s.as_ref().and_then(|s| s.cache.as_ref().filter(|c| c.is_ready()))).collect();
        let key = caches.as_ref().map(|caches| [caches[0].resource_version(), caches[1].resource_version()]);
        if let (Some(key), Some((cached, hooks))) = (key, self.current.lock().as_ref())
            && key == *cached
        {
            return hooks.clone();
        }
        let mut lists = Vec::with_capacity(2);
        for store in stores.iter().flatten() {
            let cached = match store.cache.as_ref().filter(|c| c.is_ready()) {
                Some(cache) => cache.list(None, None, None).await.map(|l| l.items).ok(),
                None => None,
            };
            lists.push(match cached {
                Some(objects) => objects,
                None => store.list_all_now().await.unwrap_or_default(),
            });
        }
        lists.resize(2, Vec::new());
        let hooks = Arc::new(Hooks::from_configurations(&lists[0], &lists[1]));
        if let Some(key) = key {
            *self.current.lock() = Some((key, hooks.clone()));
        }
        hooks
    }
}

/// Where a Service a webhook names is reached (`serve --webhook-service NS/NAME=https://HOST:PORT`):
/// nothing runs in-cluster, so each Service a webhook names is mapped to an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceUrl {
    /// The Service's namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// `host:port` to connect to.
    pub address: String,
}

impl std::str::FromStr for ServiceUrl {
    type Err = String;

    /// `NAMESPACE/NAME=https://HOST:PORT` (or `=HOST:PORT`).
    fn from_str(value: &str) -> Result<ServiceUrl, String> {
        let form = "expected NAMESPACE/NAME=https://HOST:PORT";
        let (service, target) = value.split_once('=').ok_or(form)?;
        let (namespace, name) = service.split_once('/').ok_or(form)?;
        let address = target.strip_prefix("https://").unwrap_or(target).trim_end_matches('/');
        if namespace.is_empty() || name.is_empty() || address.is_empty() || address.contains('/') {
            return Err(form.into());
        }
        Ok(ServiceUrl { namespace: namespace.into(), name: name.into(), address: address.into() })
    }
}
