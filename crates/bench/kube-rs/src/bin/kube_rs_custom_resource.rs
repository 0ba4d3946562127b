//! kube-rs (`kube` 5) against a custom resource of listwatch's: what a kube-rs controller does
//! first. Installs a CRD, then `Patch::Apply` with a field manager creates an object, a
//! `watcher` on the custom resource sees it and then a second apply's change, and the
//! object's managedFields name the manager. Prints one line per check and `ok`; any failure
//! exits non-zero. Run by `tests/e2e/kube_rs.rs` through `scripts/kube-rs-programs.sh`.
//!
//!     kube_rs_custom_resource KUBECONFIG

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Config};
use serde_json::json;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: kube_rs_custom_resource KUBECONFIG")?;
    let kubeconfig = Kubeconfig::read_from(path)?;
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    let client = Client::try_from(config)?;

    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.kube-rs.example.com"},
        "spec": {"group": "kube-rs.example.com", "scope": "Namespaced",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["name"],
                            "items": {"type": "object", "required": ["name"], "properties": {
                                "name": {"type": "string"}, "port": {"type": "integer"}}}}}}}}}}]}
    }))?;
    crds.create(&PostParams::default(), &crd).await?;
    let established = async {
        loop {
            let now = crds.get("gadgets.kube-rs.example.com").await?;
            let conditions = now.status.and_then(|s| s.conditions).unwrap_or_default();
            if conditions.iter().any(|c| c.type_ == "Established" && c.status == "True") {
                return Ok::<_, kube::Error>(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), established).await??;
    println!("established");

    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("kube-rs.example.com", "v1", "Gadget"), "gadgets");
    let gadgets: Api<DynamicObject> = Api::namespaced_with(client, "default", &resource);
    let apply = |replicas: i64| {
        json!({"apiVersion": "kube-rs.example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"},
            "spec": {"replicas": replicas, "ports": [{"name": "http", "port": 80}]}})
    };
    let params = PatchParams::apply("kube-rs-controller").force();
    let created = gadgets.patch("g1", &params, &Patch::Apply(apply(1))).await?;
    let managers: Vec<_> =
        created.metadata.managed_fields.unwrap_or_default().into_iter().map(|m| (m.manager, m.operation)).collect();
    assert!(managers.contains(&(Some("kube-rs-controller".into()), Some("Apply".into()))), "{managers:?}");
    println!("applied");

    let mut stream = watcher(gadgets.clone(), watcher::Config::default()).applied_objects().boxed();
    let first = tokio::time::timeout(Duration::from_secs(10), stream.next()).await?.ok_or("the watch ended")??;
    assert_eq!(first.data["spec"]["replicas"], 1, "{:?}", first.data);
    gadgets.patch("g1", &params, &Patch::Apply(apply(3))).await?;
    let changed = async {
        while let Some(object) = stream.next().await {
            let object = object?;
            if object.data["spec"]["replicas"] == 3 {
                return Ok::<_, Box<dyn std::error::Error>>(());
            }
        }
        Err("the watch ended".into())
    };
    tokio::time::timeout(Duration::from_secs(10), changed).await??;
    println!("watched the change");
    println!("ok");
    Ok(())
}
