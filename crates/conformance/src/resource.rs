//! The one place that knows which resource the checks work on: ConfigMaps (the default), or
//! `conformanceblobs.conformance.listwatch.dev`, a ConfigMap-shaped custom resource the run
//! installs itself (see `crd.rs`), so that the same checks prove that a custom resource goes
//! through the same LIST/WATCH paths (watch cache, bookmarks, paging, 410) as a built-in.
//!
//! Checks ask this for paths, `apiVersion`, kind, list kind and object bodies rather than
//! spelling out ConfigMaps'. Where kube-apiserver treats the two differently (protobuf, Table
//! columns, Conflict messages), the checks ask [`Resource::is_custom`] and assert kube's
//! answer for each.

use serde_json::{Map, Value, json};

/// The group of the conformance suite's own CRD.
const CUSTOM_GROUP: &str = "conformance.listwatch.dev";

/// The resource every check works on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Resource {
    /// Core v1 ConfigMaps.
    #[default]
    #[value(name = "configmaps")]
    ConfigMaps,
    /// `ConformanceBlob` (`conformanceblobs.conformance.listwatch.dev/v1`, namespaced): a
    /// custom resource shaped like a ConfigMap, whose CRD the run installs (or finds).
    Custom,
}

impl Resource {
    /// Whether this is the custom resource (served as kube serves CRs: JSON and YAML only).
    pub fn is_custom(self) -> bool {
        self == Resource::Custom
    }

    /// The API group (`""` for the core group).
    pub fn group(self) -> &'static str {
        match self {
            Resource::ConfigMaps => "",
            Resource::Custom => CUSTOM_GROUP,
        }
    }

    /// The version served (and stored).
    pub fn version(self) -> &'static str {
        "v1"
    }

    /// The resource name in URLs: `configmaps`, `conformanceblobs`.
    pub fn plural(self) -> &'static str {
        match self {
            Resource::ConfigMaps => "configmaps",
            Resource::Custom => "conformanceblobs",
        }
    }

    /// The objects' `kind`.
    pub fn kind(self) -> &'static str {
        match self {
            Resource::ConfigMaps => "ConfigMap",
            Resource::Custom => "ConformanceBlob",
        }
    }

    /// The lists' `kind`: the kind and `List`.
    pub fn list_kind(self) -> String {
        format!("{}List", self.kind())
    }

    /// `apiVersion` of the objects: `v1`, or `<group>/v1`.
    pub fn api_version(self) -> String {
        match self.group() {
            "" => self.version().to_string(),
            group => format!("{group}/{}", self.version()),
        }
    }

    /// The group resource as kube names it in messages (`configmaps`,
    /// `conformanceblobs.conformance.listwatch.dev`).
    pub fn qualified(self) -> String {
        match self.group() {
            "" => self.plural().to_string(),
            group => format!("{}.{group}", self.plural()),
        }
    }

    /// `/api/v1` or `/apis/<group>/v1`.
    fn group_version_path(self) -> String {
        match self.group() {
            "" => format!("/api/{}", self.version()),
            group => format!("/apis/{group}/{}", self.version()),
        }
    }

    /// The collection in `namespace`.
    pub fn collection(self, namespace: &str) -> String {
        format!("{}/namespaces/{namespace}/{}", self.group_version_path(), self.plural())
    }

    /// The deprecated watch form of the collection: `…/watch/namespaces/<ns>/<plural>`.
    pub fn legacy_watch_collection(self, namespace: &str) -> String {
        format!("{}/watch/namespaces/{namespace}/{}", self.group_version_path(), self.plural())
    }

    /// An object body: `apiVersion`, `kind`, `metadata` (name, the namespace when given,
    /// labels) and `data`, the map of strings both resources carry.
    pub fn object(self, name: &str, namespace: Option<&str>, labels: Map<String, Value>, data: Value) -> Value {
        let mut metadata = json!({"name": name, "labels": labels});
        if let Some(namespace) = namespace {
            metadata["namespace"] = json!(namespace);
        }
        json!({"apiVersion": self.api_version(), "kind": self.kind(), "metadata": metadata, "data": data})
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_names_of_both_resources() {
        let configmaps = Resource::ConfigMaps;
        assert_eq!(configmaps.collection("ns"), "/api/v1/namespaces/ns/configmaps");
        assert_eq!(configmaps.legacy_watch_collection("ns"), "/api/v1/watch/namespaces/ns/configmaps");
        assert_eq!((configmaps.api_version(), configmaps.qualified()), ("v1".into(), "configmaps".into()));
        let custom = Resource::Custom;
        assert_eq!(custom.collection("ns"), "/apis/conformance.listwatch.dev/v1/namespaces/ns/conformanceblobs");
        assert_eq!(
            custom.legacy_watch_collection("ns"),
            "/apis/conformance.listwatch.dev/v1/watch/namespaces/ns/conformanceblobs"
        );
        assert_eq!(custom.api_version(), "conformance.listwatch.dev/v1");
        assert_eq!(custom.qualified(), "conformanceblobs.conformance.listwatch.dev");
        assert_eq!(custom.list_kind(), "ConformanceBlobList");
        let object = custom.object("a", Some("ns"), Map::new(), json!({"value": "1"}));
        assert_eq!(object["kind"], "ConformanceBlob");
        assert_eq!(object["metadata"]["namespace"], "ns");
    }
}
