//! The client against a real listwatch server (the built binary), on the embedded store and on
//! etcd: the verbs and their typed errors, every watch transport and encoding, and informers
//! that must end up equal to the server after storms of writes, forced 410s, dropped watchers,
//! 429s, server restarts and etcd restarts — without ever telling a handler twice about the same
//! resourceVersion of an object.

// The helpers every test file of this crate shares, one directory up.
#[path = "../support/mod.rs"]
mod support;

mod informers;
mod retry_watcher;
mod verbs;

use std::collections::BTreeMap;

use listwatch_client::{ObjectMeta, impl_resource};
use serde::{Deserialize, Serialize};

/// A typed ConfigMap, for the typed `Api` and informers beside the dynamic ones.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
struct ConfigMap {
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "apiVersion")]
    api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    metadata: ObjectMeta,
    #[serde(default)]
    data: BTreeMap<String, String>,
}

impl_resource!(ConfigMap, group: "", version: "v1", kind: "ConfigMap", plural: "configmaps", namespaced: true);

fn typed(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        metadata: ObjectMeta { name: Some(name.into()), ..ObjectMeta::default() },
        data: [("v".to_owned(), value.to_owned())].into(),
    }
}
