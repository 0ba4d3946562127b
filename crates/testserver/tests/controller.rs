//! The example a kube-rs project copies: a kube-runtime `Controller` that turns each Widget's
//! `spec.data` into an owned ConfigMap (server-side apply), keeps a finalizer, and reports
//! `status.ready`, tested against a `TestServer` on the happy path and then under a cache reset,
//! dropped watches, a storage outage and a restart, each asserting convergence and a clean
//! client audit.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::finalizer::{self, Event, finalizer};
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::runtime::watcher;
use kube::{Client, CustomResource, Resource, ResourceExt};
use listwatch_testserver::TestServer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The custom resource (its CRD is tests/widgets.yaml).
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus")]
pub struct WidgetSpec {
    /// What the owned ConfigMap holds.
    pub data: BTreeMap<String, String>,
}

/// What the controller reports.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    ready: bool,
    observed_generation: Option<i64>,
}

const FINALIZER: &str = "example.com/configmap";
const MANAGER: &str = "widget-controller";

async fn reconcile(widget: Arc<Widget>, client: Arc<Client>) -> Result<Action, finalizer::Error<kube::Error>> {
    let namespace = widget.namespace().unwrap_or_else(|| "default".into());
    let widgets: Api<Widget> = Api::namespaced((*client).clone(), &namespace);
    finalizer(&widgets, FINALIZER, widget, |event| async {
        let configmaps: Api<ConfigMap> = Api::namespaced((*client).clone(), &namespace);
        match event {
            Event::Apply(widget) => {
                let name = widget.name_any();
                let configmap = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(name.clone()),
                        owner_references: widget.controller_owner_ref(&()).map(|owner| vec![owner]),
                        ..Default::default()
                    },
                    data: Some(widget.spec.data.clone()),
                    ..Default::default()
                };
                configmaps.patch(&name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&configmap)).await?;
                let status =
                    serde_json::json!({"status": {"ready": true, "observedGeneration": widget.meta().generation}});
                widgets.patch_status(&name, &PatchParams::default(), &Patch::Merge(&status)).await?;
                Ok(Action::await_change())
            }
            Event::Cleanup(widget) => {
                match configmaps.delete(&widget.name_any(), &DeleteParams::default()).await {
                    Ok(_) => {}
                    Err(kube::Error::Api(status)) if status.code == 404 => {}
                    Err(e) => return Err(e),
                }
                Ok(Action::await_change())
            }
        }
    })
    .await
}

fn error_policy(_: Arc<Widget>, _: &finalizer::Error<kube::Error>, _: Arc<Client>) -> Action {
    Action::requeue(Duration::from_millis(500))
}

/// Runs the controller until the test ends.
fn run_controller(client: Client) {
    let widgets: Api<Widget> = Api::all(client.clone());
    let configmaps: Api<ConfigMap> = Api::all(client.clone());
    let controller = Controller::new(widgets, watcher::Config::default())
        .owns(configmaps, watcher::Config::default())
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|_| futures::future::ready(()));
    tokio::spawn(controller);
}

async fn start() -> (TestServer, Client) {
    let server = TestServer::builder().crd_file("tests/widgets.yaml").start().await.expect("the server starts");
    let client = server.client().expect("a kube client");
    run_controller(client.clone());
    (server, client)
}

fn widget(name: &str, value: &str) -> Widget {
    let mut widget = Widget::new(name, WidgetSpec { data: BTreeMap::from([("value".into(), value.into())]) });
    widget.metadata.namespace = Some("default".into());
    widget
}

/// Waits (30 s at most) until `name` meets `condition`; the watch behind it is a kube-runtime
/// watcher, so the wait itself is a client the audit judges.
async fn until<K>(api: &Api<K>, name: &str, condition: impl Condition<K>)
where
    K: kube::Resource + Clone + std::fmt::Debug + for<'de> Deserialize<'de> + Send + 'static,
{
    tokio::time::timeout(Duration::from_secs(30), await_condition(api.clone(), name, condition))
        .await
        .unwrap_or_else(|_| panic!("{name} did not reach the condition within 30 s"))
        .expect("the wait's watch");
}

fn holds(value: &str) -> impl Condition<ConfigMap> + '_ {
    move |cm: Option<&ConfigMap>| {
        cm.and_then(|cm| cm.data.as_ref()).and_then(|d| d.get("value")).is_some_and(|v| v == value)
    }
}

fn ready(widget: Option<&Widget>) -> bool {
    widget.and_then(|w| w.status.as_ref()).is_some_and(|s| s.ready)
}

/// Changes `name`'s value, retrying while the server refuses writes (a storage outage).
async fn set_value(widgets: &Api<Widget>, name: &str, value: &str) {
    let patch = serde_json::json!({"spec": {"data": {"value": value}}});
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match widgets.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await {
            Ok(_) => return,
            Err(e) if tokio::time::Instant::now() < deadline => {
                eprintln!("retrying a write: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Err(e) => panic!("writing {name}: {e}"),
        }
    }
}

fn assert_clean_audit(server: &TestServer) {
    let report = server.audit();
    assert!(!report.clients.is_empty(), "the audit saw no client");
    assert!(report.clean(), "the audit found: {:#?}", report.findings);
}

#[tokio::test]
async fn a_widget_becomes_an_owned_configmap_and_is_cleaned_up() {
    let (server, client) = start().await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), "default");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    widgets.create(&PostParams::default(), &widget("w1", "one")).await.expect("create");
    until(&configmaps, "w1", holds("one")).await;
    until(&widgets, "w1", ready).await;
    let owners = configmaps.get("w1").await.expect("the configmap").owner_references().to_vec();
    assert_eq!(owners.first().map(|o| o.kind.as_str()), Some("Widget"));

    set_value(&widgets, "w1", "two").await;
    until(&configmaps, "w1", holds("two")).await;

    let uid = widgets.get("w1").await.expect("the widget").uid().expect("a uid");
    widgets.delete("w1", &DeleteParams::default()).await.expect("delete");
    until(&widgets, "w1", conditions::is_deleted(&uid)).await;
    until(&configmaps, "w1", |cm: Option<&ConfigMap>| cm.is_none()).await;
    assert_clean_audit(&server);
}

#[tokio::test]
async fn the_controller_converges_through_a_cache_reset_dropped_watches_an_outage_and_a_restart() {
    let (server, client) = start().await;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), "default");
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let names: Vec<String> = (0..5).map(|i| format!("w{i}")).collect();
    for name in &names {
        widgets.create(&PostParams::default(), &widget(name, "start")).await.expect("create");
    }
    for name in &names {
        until(&configmaps, name, holds("start")).await;
    }

    // Each fault, then changes the controller must not miss.
    let faults = server.faults();
    faults.reset_cache("widgets.example.com").await.expect("reset the widgets cache");
    set_value(&widgets, "w0", "after-reset").await;
    assert!(faults.drop_watches("configmaps").expect("drop the configmap watches") > 0, "no watch to drop");
    faults.drop_watches("widgets.example.com").expect("drop the widget watches");
    set_value(&widgets, "w1", "after-drop").await;
    faults.storage_outage(Duration::from_secs(2)).expect("a storage outage");
    set_value(&widgets, "w2", "after-outage").await;
    faults.restart().await.expect("a restart");
    set_value(&widgets, "w3", "after-restart").await;

    for (name, value) in [("w0", "after-reset"), ("w1", "after-drop"), ("w2", "after-outage"), ("w3", "after-restart")]
    {
        until(&configmaps, name, holds(value)).await;
    }
    until(&configmaps, "w4", holds("start")).await;
    assert_clean_audit(&server);
}
