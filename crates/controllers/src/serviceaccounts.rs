//! kube-controller-manager's service account controller: every namespace has a ServiceAccount
//! named `default` (pods without a `serviceAccountName` run as it, and RBAC bindings name it),
//! made again if deleted. A namespace being terminated gets none.

use listwatch_client::{Api, ApiResource, Client, DynamicObject, HandlerFns, SharedInformerFactory};
use serde_json::{Value, json};

use crate::common::{self, Workers};

/// The account every namespace gets.
pub const DEFAULT: &str = "default";

fn serviceaccounts() -> ApiResource {
    ApiResource::new("", "v1", "ServiceAccount", "serviceaccounts", true)
}

/// The controller: namespaces and ServiceAccounts watched, one key per namespace.
pub struct ServiceAccounts;

impl ServiceAccounts {
    pub(crate) fn register(client: Client, factory: &SharedInformerFactory) -> anyhow::Result<Workers> {
        let namespaces = common::informer(factory, &ApiResource::namespaces());
        let accounts = common::informer(factory, &serviceaccounts());
        let queue = common::queue("serviceaccount");
        let (q_add, q_update, q_deleted) = (queue.clone(), queue.clone(), queue.clone());
        namespaces.add_event_handler(
            HandlerFns::<DynamicObject>::new()
                .on_add(move |ns, _| q_add.add(name_of(ns)))
                .on_update(move |_, ns, _| q_update.add(name_of(ns))),
        )?;
        accounts.add_event_handler(HandlerFns::<DynamicObject>::new().on_delete(move |deleted| {
            let account = deleted.object();
            if name_of(account) == DEFAULT {
                q_deleted.add(account.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string());
            }
        }))?;
        let (ns_store, sa_store) = (namespaces.store(), accounts.store());
        let sync: common::SyncFn = std::sync::Arc::new(move |namespace: String| {
            let (client, ns_store, sa_store) = (client.clone(), ns_store.clone(), sa_store.clone());
            Box::pin(async move {
                let Some(ns) = ns_store.get(&namespace) else { return Ok(None) };
                if ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating")
                    || ns.pointer("/metadata/deletionTimestamp").is_some_and(|d| !d.is_null())
                {
                    return Ok(None);
                }
                if sa_store.get_namespaced(Some(&namespace), DEFAULT).is_some() {
                    return Ok(None);
                }
                let api: Api<DynamicObject> = Api::new(client, serviceaccounts(), Some(&namespace));
                let account = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": DEFAULT}});
                match api.create(&account).await {
                    Ok(_) => Ok(None),
                    // There already (the informer had not seen it), or the namespace is going.
                    Err(e) if matches!(e.code(), Some(409 | 403 | 404)) => Ok(None),
                    Err(e) => Err(anyhow::Error::new(e)),
                }
            })
        });
        Ok(Workers { name: "serviceaccount", queue, sync })
    }
}

fn name_of(object: &DynamicObject) -> String {
    object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string()
}
