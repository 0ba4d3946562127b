//! CRDs installed before the first request, as envtest's `CRDInstallOptions`: read from files,
//! directories or text, created through the API as `kubectl apply` would (so the server
//! validates them and answers kube's message), then awaited until every served version is.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use listwatch_apiserver::ApiState;
use serde_json::Value;

use crate::Error;

/// How long a CRD may take to be served.
const ESTABLISH_DEADLINE: Duration = Duration::from_secs(30);

/// Where a CRD comes from.
#[derive(Clone, Debug)]
pub(crate) enum CrdSource {
    /// A YAML file (several documents allowed), or every `.yaml`/`.yml`/`.json` file of a
    /// directory.
    Path(PathBuf),
    /// YAML text (several documents allowed).
    Yaml(String),
}

/// A CRD and where it came from.
pub(crate) struct Crd {
    origin: String,
    object: Value,
}

/// Reads every CRD of `sources`, in order.
pub(crate) fn load(sources: &[CrdSource]) -> Result<Vec<Crd>, Error> {
    let mut crds = Vec::new();
    for (n, source) in sources.iter().enumerate() {
        match source {
            CrdSource::Yaml(text) => crds.extend(parse(&format!("<crd_yaml #{}>", n + 1), text)?),
            CrdSource::Path(path) if path.is_dir() => {
                let mut files: Vec<_> = std::fs::read_dir(path)
                    .map_err(|e| read_error(path, &e))?
                    .filter_map(Result::ok)
                    .map(|entry| entry.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml" || x == "json"))
                    .collect();
                files.sort();
                for file in files {
                    crds.extend(parse_file(&file)?);
                }
            }
            CrdSource::Path(path) => crds.extend(parse_file(path)?),
        }
    }
    Ok(crds)
}

fn read_error(path: &Path, error: &std::io::Error) -> Error {
    Error::CrdFile { file: path.display().to_string(), message: error.to_string() }
}

fn parse_file(path: &Path) -> Result<Vec<Crd>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| read_error(path, &e))?;
    parse(&path.display().to_string(), &text)
}

/// Every document of `text` (YAML or JSON), each a CustomResourceDefinition.
fn parse(origin: &str, text: &str) -> Result<Vec<Crd>, Error> {
    use serde::Deserialize;
    let mut crds = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let object = Value::deserialize(document)
            .map_err(|e| Error::CrdFile { file: origin.to_string(), message: e.to_string() })?;
        if object.is_null() {
            continue;
        }
        let kind = object["kind"].as_str().unwrap_or("");
        if kind != "CustomResourceDefinition" {
            return Err(Error::CrdFile {
                file: origin.to_string(),
                message: format!("a document of kind {kind:?}, not a CustomResourceDefinition"),
            });
        }
        crds.push(Crd { origin: origin.to_string(), object });
    }
    Ok(crds)
}

/// Creates each CRD, then waits until every version it serves is served.
pub(crate) async fn install(client: &listwatch_client::Client, state: &ApiState, crds: &[Crd]) -> Result<(), Error> {
    for crd in crds {
        let name = crd.object["metadata"]["name"].as_str().unwrap_or("").to_string();
        let body = Bytes::from(serde_json::to_vec(&crd.object).map_err(anyhow::Error::from)?);
        let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
        if let Err(e) = client.request(Method::POST, path, "application/json", Some(("application/json", body))).await {
            let message = e.status().map_or_else(|| e.to_string(), |status| status.message.clone());
            return Err(Error::CrdRefused { file: crd.origin.clone(), name, message });
        }
    }
    let deadline = tokio::time::Instant::now() + ESTABLISH_DEADLINE;
    for crd in crds {
        let spec = &crd.object["spec"];
        let (group, plural) = (spec["group"].as_str().unwrap_or(""), spec["names"]["plural"].as_str().unwrap_or(""));
        let served = spec["versions"].as_array().into_iter().flatten().filter(|v| v["served"] == true);
        for version in served.filter_map(|v| v["name"].as_str()) {
            while state.store(group, version, plural).is_none() {
                if tokio::time::Instant::now() >= deadline {
                    return Err(Error::Other(anyhow::anyhow!(
                        "{}: {plural}.{group}/{version} not served within {} s",
                        crd.origin,
                        ESTABLISH_DEADLINE.as_secs()
                    )));
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
    Ok(())
}
