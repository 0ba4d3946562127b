//! An HTTP read API served from an informer's cache instead of the API server — the gin
//! integration at the end of "client-go gin的简单整合四-list-watch初探", with axum. The article
//! keeps its own `sync.Map` of deployments filled by `OnAdd` (and never updated or emptied); an
//! informer's lister already is that map, kept right by the watch.
//!
//! ```sh
//! cargo run -p listwatch-client --example deployment_api -- [--kubeconfig PATH] [--addr 127.0.0.1:8081]
//! kubectl create namespace develop && kubectl -n develop create deployment nginx --image=nginx
//! curl http://127.0.0.1:8081/deployments/develop          # [{"name":"nginx","replicas":1,...}]
//! kubectl -n develop scale deployment/nginx --replicas=3   # the next GET says 3
//! ```
//!
//! Routes: `GET /deployments` (every namespace), `GET /deployments/{namespace}`,
//! `GET /deployments/{namespace}/{name}` (404 when the cache has no such deployment). None of
//! them sends a request to the API server. The default port is 8081 because listwatch's
//! `scripts/serve.sh` takes the article's 8080.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use clap::Parser;
use listwatch_client::{LabelSelector, Lister, Object, SharedInformerFactory};
use serde::Serialize;

use common::{Connection, Deployment};

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    connection: Connection,
    /// Where to serve (`127.0.0.1:0` picks a free port).
    #[arg(long, default_value = "127.0.0.1:8081")]
    addr: SocketAddr,
}

/// What the API answers for one deployment.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeploymentSummary {
    namespace: String,
    name: String,
    /// `spec.replicas`: how many pods are wanted.
    replicas: i32,
    ready_replicas: i32,
    available_replicas: i32,
    images: Vec<String>,
}

impl From<&Deployment> for DeploymentSummary {
    fn from(deployment: &Deployment) -> Self {
        DeploymentSummary {
            namespace: deployment.namespace().unwrap_or_default().to_owned(),
            name: deployment.name().to_owned(),
            replicas: deployment.replicas(),
            ready_replicas: deployment.status.ready_replicas,
            available_replicas: deployment.status.available_replicas,
            images: deployment.spec.template.spec.containers.iter().filter_map(|c| c.image.clone()).collect(),
        }
    }
}

fn summaries<'a>(deployments: impl IntoIterator<Item = &'a Deployment>) -> Vec<DeploymentSummary> {
    let mut out: Vec<DeploymentSummary> = deployments.into_iter().map(DeploymentSummary::from).collect();
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    out
}

async fn all_deployments(State(lister): State<Lister<Deployment>>) -> Json<Vec<DeploymentSummary>> {
    let deployments = lister.list(&LabelSelector::everything());
    Json(summaries(deployments.iter().map(AsRef::as_ref)))
}

async fn deployments_in(
    State(lister): State<Lister<Deployment>>,
    Path(namespace): Path<String>,
) -> Json<Vec<DeploymentSummary>> {
    let deployments = lister.namespace(&namespace).list(&LabelSelector::everything());
    Json(summaries(deployments.iter().map(AsRef::as_ref)))
}

async fn one_deployment(
    State(lister): State<Lister<Deployment>>,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<DeploymentSummary>, StatusCode> {
    let deployment = lister.namespace(&namespace).get(&name).ok_or(StatusCode::NOT_FOUND)?;
    Ok(Json(DeploymentSummary::from(deployment.as_ref())))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    common::init_logging();
    let args = Args::parse();
    let factory = SharedInformerFactory::new(args.connection.client()?);
    let deployments = factory.informer::<Deployment>();
    factory.start();
    // Serve only once the cache holds the full list: before that it would answer "none".
    if !factory.wait_for_cache_sync(Duration::from_secs(30)).await {
        anyhow::bail!("time out: the deployment cache did not sync within 30 s");
    }

    let app = Router::new()
        .route("/deployments", get(all_deployments))
        .route("/deployments/{namespace}", get(deployments_in))
        .route("/deployments/{namespace}/{name}", get(one_deployment))
        .with_state(deployments.lister());
    let listener = tokio::net::TcpListener::bind(args.addr).await?;
    println!("serving deployments on http://{}", listener.local_addr()?);
    axum::serve(listener, app).with_graceful_shutdown(async { tokio::signal::ctrl_c().await.unwrap_or(()) }).await?;
    factory.shutdown();
    Ok(())
}
