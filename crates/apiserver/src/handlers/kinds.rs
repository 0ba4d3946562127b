//! Which kind a JSON body is, and why kube-apiserver cannot decode it as the resource's kind.
//!
//! kube's JSON serializer first reads `apiVersion` and `kind` alone (`SimpleMetaFactory.Interpret`:
//! Go's `encoding/json` into a two-field struct, so keys match case-insensitively and a
//! non-string value is `json: cannot unmarshal number into Go struct field .kind of type
//! string`; then `schema.ParseGroupVersion`). What is missing defaults to the URL's group,
//! version and kind. It then creates an object of the kind the body names from its scheme
//! (`no kind "Widget" is registered for version "v1" in scheme "..."`), decodes the body into
//! it, and converts that to the resource's internal type, which fails for any other kind
//! (`converting (v1.Secret) to (core.ConfigMap): unknown conversion`). `transformDecodeError`
//! (handlers/rest.go) turns each into a 400: `<Kind> in version "<v>" cannot be handled as a
//! <Resource kind>: <error>` once a kind is known.
//!
//! The scheme here is kube-apiserver 1.32's for the groups this server serves (every
//! registered version, including ones it does not serve); a kind of another group counts as
//! unregistered. kube converts between versions of one kind (`apps/v1beta2` Deployment to
//! `apps/v1`), which this server does not: such bodies get the conversion error.

use listwatch_gocompat::json as go_json;
use listwatch_meta::Resource;
use listwatch_meta::validation::go_quote;
use serde_json::{Map, Value};

/// The name kube-apiserver's scheme has in its errors (`runtime.NewScheme`'s call site).
const LEGACY_SCHEME: &str = "pkg/api/legacyscheme/scheme.go:30";

/// Go's type of kube's `findKind` struct, as a type error names it.
const FIND_KIND_TYPE: &str =
    r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

/// Kinds registered in any version (`AddUnversionedTypes`).
const UNVERSIONED_KINDS: &[&str] = &["Status", "APIVersions", "APIGroupList", "APIGroup", "APIResourceList"];

/// Kinds `metav1.AddToGroupVersion` registers in every group version.
const OPTIONS_KINDS: &[&str] =
    &["ListOptions", "GetOptions", "DeleteOptions", "CreateOptions", "UpdateOptions", "PatchOptions", "WatchEvent"];

const CORE_V1: &[&str] = &[
    "Pod",
    "PodList",
    "PodStatusResult",
    "PodTemplate",
    "PodTemplateList",
    "ReplicationController",
    "ReplicationControllerList",
    "Service",
    "ServiceProxyOptions",
    "ServiceList",
    "Endpoints",
    "EndpointsList",
    "Node",
    "NodeList",
    "NodeProxyOptions",
    "Binding",
    "Event",
    "EventList",
    "LimitRange",
    "LimitRangeList",
    "ResourceQuota",
    "ResourceQuotaList",
    "Namespace",
    "NamespaceList",
    "Secret",
    "SecretList",
    "ServiceAccount",
    "ServiceAccountList",
    "PersistentVolume",
    "PersistentVolumeList",
    "PersistentVolumeClaim",
    "PersistentVolumeClaimList",
    "PodAttachOptions",
    "PodLogOptions",
    "PodExecOptions",
    "PodPortForwardOptions",
    "PodProxyOptions",
    "ComponentStatus",
    "ComponentStatusList",
    "SerializedReference",
    "RangeAllocation",
    "ConfigMap",
    "ConfigMapList",
    "EphemeralContainers",
    "List",
];

const APPS_V1: &[&str] = &[
    "Deployment",
    "DeploymentList",
    "StatefulSet",
    "StatefulSetList",
    "DaemonSet",
    "DaemonSetList",
    "ReplicaSet",
    "ReplicaSetList",
    "ControllerRevision",
    "ControllerRevisionList",
];

const APPS_V1BETA1: &[&str] = &[
    "Deployment",
    "DeploymentList",
    "DeploymentRollback",
    "Scale",
    "StatefulSet",
    "StatefulSetList",
    "ControllerRevision",
    "ControllerRevisionList",
];

const APPS_V1BETA2: &[&str] = &[
    "Deployment",
    "DeploymentList",
    "StatefulSet",
    "StatefulSetList",
    "DaemonSet",
    "DaemonSetList",
    "ReplicaSet",
    "ReplicaSetList",
    "Scale",
    "ControllerRevision",
    "ControllerRevisionList",
];

/// Group, version, and the kinds registered there.
const SCHEME: &[(&str, &str, &[&str])] = &[
    ("", "v1", CORE_V1),
    ("apps", "v1", APPS_V1),
    ("apps", "v1beta1", APPS_V1BETA1),
    ("apps", "v1beta2", APPS_V1BETA2),
    ("coordination.k8s.io", "v1", &["Lease", "LeaseList"]),
    ("coordination.k8s.io", "v1beta1", &["Lease", "LeaseList"]),
    ("coordination.k8s.io", "v1alpha2", &["LeaseCandidate", "LeaseCandidateList"]),
];

/// The group, version and kind a body names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BodyKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// Go's `foldName` for the ASCII names `apiVersion` and `kind`: upper case, with the two
/// non-ASCII runes that fold onto their letters (KELVIN SIGN, LONG S).
fn fold(c: char) -> char {
    match c {
        '\u{212A}' => 'K',
        '\u{17F}' => 'S',
        c => c.to_ascii_uppercase(),
    }
}

fn folds_to(key: &str, name: &str) -> bool {
    key.chars().map(fold).eq(name.chars().map(fold))
}

/// kube's `SimpleMetaFactory.Interpret` on a well-formed JSON document: the group, version
/// and kind it names, or the error (`couldn't get version/kind; json parse error: ...`,
/// `unexpected GroupVersion string: a/b/c`).
pub fn interpret(value: &Value) -> Result<BodyKind, String> {
    let parse_error = |e: String| format!("couldn't get version/kind; json parse error: {e}");
    let object = match value {
        Value::Object(object) => object,
        Value::Null => return Ok(BodyKind::default()),
        other => return Err(parse_error(go_json::type_error(go_json::json_kind(other), "", "", FIND_KIND_TYPE))),
    };
    let (mut api_version, mut kind) = (String::new(), String::new());
    let mut first_error = None;
    for (key, value) in object {
        let (target, field) = if key == "apiVersion" || folds_to(key, "apiVersion") {
            (&mut api_version, "apiVersion")
        } else if key == "kind" || folds_to(key, "kind") {
            (&mut kind, "kind")
        } else {
            continue;
        };
        match value {
            Value::String(text) => text.clone_into(target),
            Value::Null => {}
            other => {
                first_error.get_or_insert_with(|| go_json::type_error(go_json::json_kind(other), "", field, "string"));
            }
        }
    }
    if let Some(error) = first_error {
        return Err(parse_error(error));
    }
    let (group, version) = match api_version.as_str() {
        "" | "/" => (String::new(), String::new()),
        text => match text.split('/').collect::<Vec<_>>().as_slice() {
            [version] => (String::new(), (*version).to_owned()),
            [group, version] => ((*group).to_owned(), (*version).to_owned()),
            _ => return Err(format!("unexpected GroupVersion string: {api_version}")),
        },
    };
    Ok(BodyKind { group, version, kind })
}

/// The kind of a protobuf body from its envelope's TypeMeta, defaulted as kube's protobuf
/// serializer does (`copyKindDefaults`: a missing version takes the resource's group and
/// version; an apiVersion that does not parse counts as missing).
pub fn from_type_meta(api_version: &str, kind: &str, resource: &Resource) -> BodyKind {
    let (group, version) = match api_version.split('/').collect::<Vec<_>>().as_slice() {
        [version] => (String::new(), (*version).to_owned()),
        [group, version] => ((*group).to_owned(), (*version).to_owned()),
        _ => (String::new(), String::new()),
    };
    let mut named = BodyKind { group, version, kind: kind.to_owned() };
    if named.kind.is_empty() {
        resource.kind.clone_into(&mut named.kind);
    }
    if named.version.is_empty() {
        resource.group.clone_into(&mut named.group);
        resource.version.clone_into(&mut named.version);
    }
    named
}

impl BodyKind {
    /// kube's `gvkWithDefaults`: a missing kind is the resource's; a missing group and version
    /// are the resource's, a missing version of the resource's group is its version.
    pub fn with_defaults(mut self, resource: &Resource) -> BodyKind {
        if self.kind.is_empty() {
            resource.kind.clone_into(&mut self.kind);
        }
        if self.version.is_empty() && (self.group.is_empty() || self.group == resource.group) {
            resource.group.clone_into(&mut self.group);
            resource.version.clone_into(&mut self.version);
        }
        self
    }

    fn group_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    fn is_registered(&self) -> bool {
        UNVERSIONED_KINDS.contains(&self.kind.as_str())
            || SCHEME.iter().any(|(group, version, kinds)| {
                *group == self.group
                    && *version == self.version
                    && (kinds.contains(&self.kind.as_str()) || OPTIONS_KINDS.contains(&self.kind.as_str()))
            })
    }

    /// The Go package name of the kind's versioned type (`v1` in `v1.Secret`).
    fn go_package(&self) -> &str {
        if UNVERSIONED_KINDS.contains(&self.kind.as_str()) || OPTIONS_KINDS.contains(&self.kind.as_str()) {
            "v1"
        } else {
            &self.version
        }
    }
}

/// Why a body naming `body` (defaults applied) does not decode as `resource`'s kind, in the
/// decoder's words, or `Ok` when it names the resource's own kind. `data` is the document, which
/// the missing-version error quotes; `object` its fields, which a registered kind decodes before
/// the conversion fails.
pub fn decode_failure(
    body: &BodyKind,
    resource: &Resource,
    data: &str,
    object: &Map<String, Value>,
) -> Result<(), String> {
    if body.version.is_empty() {
        return Err(format!("Object 'apiVersion' is missing in '{data}'"));
    }
    if body.group == resource.group && body.version == resource.version && body.kind == resource.kind {
        return Ok(());
    }
    if resource.dynamic.is_some() {
        // Custom resources decode into unstructured objects whatever kind they name; their
        // validation checks the kind and apiVersion (`kind: Invalid value: ...: must be ...`).
        return Ok(());
    }
    if !body.is_registered() {
        return Err(format!(
            "no kind {} is registered for version {} in scheme {}",
            go_quote(&body.kind),
            go_quote(&body.group_version()),
            go_quote(LEGACY_SCHEME)
        ));
    }
    let value = Value::Object(object.clone());
    if let Ok(Some(error)) = listwatch_proto::go_decode_error(&body.group, &body.version, &body.kind, &value) {
        return Err(error);
    }
    let internal =
        if resource.group.is_empty() { "core" } else { resource.group.split('.').next().unwrap_or_default() };
    Err(format!(
        "converting ({}.{}) to ({internal}.{}): unknown conversion",
        body.go_package(),
        body.kind,
        resource.kind
    ))
}

#[cfg(test)]
mod tests {
    use listwatch_meta::Registry;
    use serde_json::json;

    use super::*;

    fn cm() -> &'static Resource {
        Registry.find_kind("", "ConfigMap").unwrap()
    }

    #[test]
    fn interpret_reads_kind_as_go_does() {
        assert_eq!(interpret(&json!(null)), Ok(BodyKind::default()));
        let read = interpret(&json!({"APIVERSION": "apps/v1", "Kind": "Deployment"})).unwrap();
        assert_eq!((read.group.as_str(), read.version.as_str(), read.kind.as_str()), ("apps", "v1", "Deployment"));
        assert_eq!(
            interpret(&json!({"kind": 1})).unwrap_err(),
            "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string"
        );
        assert_eq!(
            interpret(&json!([])).unwrap_err(),
            format!(
                "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type {FIND_KIND_TYPE}"
            )
        );
        assert_eq!(interpret(&json!({"apiVersion": "a/b/c"})).unwrap_err(), "unexpected GroupVersion string: a/b/c");
    }

    #[test]
    fn other_kinds_fail_as_kubes_scheme() {
        let failure = |api_version: &str, kind: &str| {
            let body = interpret(&json!({"apiVersion": api_version, "kind": kind})).unwrap().with_defaults(cm());
            decode_failure(&body, cm(), "{}", &Map::new())
        };
        assert_eq!(failure("", ""), Ok(()));
        assert_eq!(failure("v1", "ConfigMap"), Ok(()));
        assert_eq!(
            failure("v1", "Secret").unwrap_err(),
            "converting (v1.Secret) to (core.ConfigMap): unknown conversion"
        );
        assert_eq!(
            failure("v1", "Widget").unwrap_err(),
            "no kind \"Widget\" is registered for version \"v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
        );
        assert_eq!(
            failure("apps/v1", "ConfigMap").unwrap_err(),
            "no kind \"ConfigMap\" is registered for version \"apps/v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
        );
        assert_eq!(
            failure("v9", "Status").unwrap_err(),
            "converting (v1.Status) to (core.ConfigMap): unknown conversion"
        );
        assert_eq!(failure("apps/", "ConfigMap").unwrap_err(), "Object 'apiVersion' is missing in '{}'");
    }
}
