//! The resource registry: every resource the server serves, described as data.
//!
//! Adding a resource is one entry in [`BUILTIN`]. Everything the server does per resource
//! (routing, discovery, OpenAPI, storage keys, field selectors, printing, subresources, the
//! watch cache) reads it from here.
//!
//! Custom resources are described by the same [`Resource`], made while the server runs from
//! their CustomResourceDefinition (the apiserver keeps that run-time set beside
//! [`BUILTIN`]). What a CRD decides beyond these fields (its schema's pruning and defaulting
//! on read, its printer columns) sits behind [`Resource::dynamic`], a [`DynamicKind`]
//! implemented where CRDs are understood, so the layers below the apiserver need not know
//! CRDs.

use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::validation::NameRule;

/// A subresource a resource offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// `/status`: writes change only `.status`; the main resource ignores `.status`.
    Status,
    /// `/scale`: an autoscaling/v1 `Scale` view of `.spec.replicas`.
    Scale,
    /// `/binding` of pods: a `v1 Binding` POSTed to put the pod on a node (create only).
    Binding,
    /// `/token` of service accounts: an `authentication.k8s.io/v1 TokenRequest` POSTed for a
    /// token of the account (create only).
    Token,
}

impl Subresource {
    /// The path segment after the object (`status`, `scale`).
    pub fn name(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Binding => "binding",
            Subresource::Token => "token",
        }
    }

    /// Whether the subresource takes POST only (a request answered, nothing read or updated).
    pub fn is_create_only(self) -> bool {
        matches!(self, Subresource::Binding | Subresource::Token)
    }
}

/// How a printer column's cell is computed (server-side printing, `as=Table`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// The object's name.
    Name,
    /// How long ago the object was created (`5m`, `3d`).
    Age,
    /// A value at a dotted path in the object (`status.phase`), or `<none>`.
    Path(&'static str),
    /// An integer at a dotted path, 0 when missing.
    Int(&'static str),
    /// The length of a list at a dotted path.
    ListLen(&'static str),
    /// Number of keys of a map at a path plus those of a second one (configmaps: data + binaryData).
    MapLen(&'static str, &'static str),
    /// `ready/total` containers of a Pod.
    PodReady,
    /// A Pod's status as kubectl sums it up (its phase, or the reason a container waits).
    PodStatus,
    /// How often a Pod's containers restarted, in total.
    PodRestarts,
    /// `ready/desired` of a Deployment or ReplicaSet.
    ReadyOfDesired,
    /// `status.phase` of a Namespace.
    NamespaceStatus,
    /// Ports of a Service.
    ServicePorts,
    /// External IPs of a Service (`<none>` for most).
    ServiceExternalIp,
    /// The addresses and ports of an Endpoints object (`<none>` when it has none).
    EndpointsAddresses,
    /// A Node's Ready condition.
    NodeStatus,
    /// Roles of a Node from its labels.
    NodeRoles,
    /// `metadata.creationTimestamp` as RFC 3339 (kube's default table convertor, `Created At`).
    CreatedAt,
    /// A binding's `roleRef` as `Kind/name` (kubectl's `Role` column).
    RoleRef,
    /// The names of a binding's subjects of one kind, comma-separated (`namespace/name` for
    /// service accounts).
    Subjects(&'static str),
    /// A ValidatingAdmissionPolicy's `paramKind` as `apiVersion/kind`, or `<unset>`.
    ParamKind,
    /// A ValidatingAdmissionPolicyBinding's `paramRef` as kubectl shows it: `namespace/name`,
    /// `*/name` without a namespace, the selector, or `<unset>`.
    ParamRef,
}

/// One column of the table kubectl prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrinterColumn {
    /// The column header (`Name`, `Age`).
    pub name: &'static str,
    /// OpenAPI type: `string`, `integer`, `date`...
    pub type_: &'static str,
    /// OpenAPI format of the cells (`name` for the Name column), or empty.
    pub format: &'static str,
    /// What the column shows, as kube's OpenAPI describes the field.
    pub description: &'static str,
    /// 0 = shown by default; 1 = only with `-o wide`.
    pub priority: i32,
    /// How each row's cell is computed.
    pub cell: Cell,
}

const fn col(name: &'static str, type_: &'static str, cell: Cell) -> PrinterColumn {
    PrinterColumn { name, type_, format: "", description: "", priority: 0, cell }
}

const NAME: PrinterColumn = PrinterColumn {
    name: "Name",
    type_: "string",
    format: "name",
    description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    priority: 0,
    cell: Cell::Name,
};
const AGE: PrinterColumn = PrinterColumn {
    name: "Age",
    type_: "string",
    format: "",
    description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
    priority: 0,
    cell: Cell::Age,
};
const CREATED_AT: PrinterColumn = PrinterColumn { name: "Created At", type_: "date", cell: Cell::CreatedAt, ..AGE };
/// kubectl's columns of webhook configurations.
const WEBHOOK_CONFIGURATION_COLUMNS: &[PrinterColumn] = &[
    NAME,
    PrinterColumn {
        description: "Webhooks indicates the number of webhooks registered in this configuration.",
        ..col("Webhooks", "integer", Cell::ListLen("webhooks"))
    },
    AGE,
];
/// kubectl's columns of RoleBindings and ClusterRoleBindings (the subjects with `-o wide`).
const BINDING_COLUMNS: &[PrinterColumn] = &[
    NAME,
    col("Role", "string", Cell::RoleRef),
    AGE,
    PrinterColumn { priority: 1, ..col("Users", "string", Cell::Subjects("User")) },
    PrinterColumn { priority: 1, ..col("Groups", "string", Cell::Subjects("Group")) },
    PrinterColumn { priority: 1, ..col("ServiceAccounts", "string", Cell::Subjects("ServiceAccount")) },
];

/// What a resource defined at run time (a custom resource) does that the static fields of
/// [`Resource`] cannot say.
pub trait DynamicKind: std::fmt::Debug + Send + Sync {
    /// Changes an object read from storage before anything serves it: custom resources are
    /// pruned and defaulted on every read, so a default added to the CRD later shows at once.
    fn on_read(&self, object: &mut Map<String, Value>);
    /// The Table's `columnDefinitions` (server-side printing).
    fn column_definitions(&self) -> Value;
    /// The cells of one object's row, its name first; `now` computes ages.
    fn cells(&self, object: &Value, now: SystemTime) -> Vec<Value>;
    /// The implementation, for the layer that made it.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// A resource served by the API.
#[derive(Debug)]
pub struct Resource {
    /// API group (`""` for core).
    pub group: &'static str,
    /// The API version served (`v1`).
    pub version: &'static str,
    /// Plural, lower-case: the URL segment (`pods`).
    pub plural: &'static str,
    /// Singular, lower-case (`pod`): discovery's `singularName`, which kubectl accepts.
    pub singular: &'static str,
    /// The kind of its objects (`Pod`).
    pub kind: &'static str,
    /// The abbreviations kubectl accepts (`po`, `cm`).
    pub short_names: &'static [&'static str],
    /// The groups `kubectl get <category>` expands to (`all`).
    pub categories: &'static [&'static str],
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Discovery verbs.
    pub verbs: &'static [&'static str],
    /// The subresources served besides the main resource.
    pub subresources: &'static [Subresource],
    /// Key prefix under the storage root, as kube-apiserver lays it out (no group for built-in
    /// resources; special prefixes for services, endpoints, nodes).
    pub storage_prefix: &'static str,
    /// Field selectors this kind supports besides `metadata.name` / `metadata.namespace`.
    pub selectable_fields: &'static [&'static str],
    /// The columns of the table server-side printing makes (`as=Table`).
    pub printer_columns: &'static [PrinterColumn],
    /// DELETE answers with the object (pods, serviceaccounts) rather than a `Status`.
    pub delete_returns_object: bool,
    /// Which rule object names must follow.
    pub name_rule: NameRule,
    /// Served from the watch cache by default (`events` is not, as upstream).
    pub watch_cache: bool,
    /// Objects of this kind have a graceful-deletion period (pods).
    pub graceful_deletion: bool,
    /// The protobuf message of this kind (its full name in `proto/`), when it has a schema.
    pub protobuf: Option<&'static str>,
    /// PUT of a missing object creates it (kube's `AllowCreateOnUpdate`).
    pub allow_create_on_update: bool,
    /// The kind of lists when it is not `<Kind>List` (a CRD names its own), else empty.
    pub custom_list_kind: &'static str,
    /// The version objects are stored in when it is not `version` (a custom resource served
    /// in several versions stores them in one), else empty.
    pub storage_version: &'static str,
    /// Objects of this version are converted to and from the storage version by a webhook (a
    /// CRD's `conversion.strategy: Webhook`), below this layer: a write keeps its own
    /// `apiVersion` for the converter to read.
    pub converted_by_webhook: bool,
    /// What a custom resource's definition decides beyond these fields; `None` for built-ins.
    pub dynamic: Option<&'static dyn DynamicKind>,
}

/// What the reviews take: they are asked, not stored.
const CREATE_ONLY: &[&str] = &["create"];
const ALL_VERBS: &[&str] = &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
const NO_COLLECTION_DELETE: &[&str] = &["create", "delete", "get", "list", "patch", "update", "watch"];

impl Resource {
    /// `v1` or `apps/v1`.
    pub fn group_version(&self) -> String {
        if self.group.is_empty() { self.version.to_string() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The `apiVersion` of objects of this kind.
    pub fn api_version(&self) -> String {
        self.group_version()
    }

    /// The kind of a list of these objects (`PodList`).
    pub fn list_kind(&self) -> String {
        if self.custom_list_kind.is_empty() { format!("{}List", self.kind) } else { self.custom_list_kind.to_string() }
    }

    /// The `apiVersion` objects are stored with (the storage version's).
    pub fn storage_api_version(&self) -> String {
        match self.storage_version {
            "" => self.api_version(),
            version if self.group.is_empty() => version.to_string(),
            version => format!("{}/{version}", self.group),
        }
    }

    /// The resource as kube names it in messages (`pods`, `deployments.apps`).
    pub fn group_resource(&self) -> crate::status::GroupResource {
        crate::status::GroupResource::new(self.group, self.plural)
    }

    /// Whether the resource offers `sub` (`/status`, `/scale`).
    pub fn has_subresource(&self, sub: Subresource) -> bool {
        self.subresources.contains(&sub)
    }

    /// Whether discovery lists `verb` for the resource.
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// Whether `field` may be used in a field selector on this kind.
    pub fn is_selectable(&self, field: &str) -> bool {
        field == "metadata.name" || field == "metadata.namespace" || self.selectable_fields.contains(&field)
    }

    /// The storage key prefix of the whole collection, ending in `/`, under `root`.
    pub fn collection_prefix(&self, root: &str) -> String {
        format!("{}/{}/", root.trim_end_matches('/'), self.storage_prefix)
    }

    /// The storage key prefix of one namespace's objects (or the whole collection), ending in `/`.
    pub fn namespace_prefix(&self, root: &str, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}{ns}/", self.collection_prefix(root)),
            _ => self.collection_prefix(root),
        }
    }

    /// The storage key of one object.
    pub fn object_key(&self, root: &str, namespace: Option<&str>, name: &str) -> String {
        format!("{}{name}", self.namespace_prefix(root, namespace))
    }
}

macro_rules! resource {
    ($($field:ident: $value:expr),* $(,)?) => {
        Resource {
            $($field: $value,)*
            ..DEFAULTS
        }
    };
}

const DEFAULTS: Resource = Resource {
    group: "",
    version: "v1",
    plural: "",
    singular: "",
    kind: "",
    short_names: &[],
    categories: &[],
    namespaced: true,
    verbs: ALL_VERBS,
    subresources: &[],
    storage_prefix: "",
    selectable_fields: &[],
    printer_columns: &[NAME, AGE],
    delete_returns_object: false,
    name_rule: NameRule::Subdomain,
    watch_cache: true,
    graceful_deletion: false,
    protobuf: None,
    allow_create_on_update: false,
    custom_list_kind: "",
    storage_version: "",
    converted_by_webhook: false,
    dynamic: None,
};

impl Resource {
    /// A resource to build others from with `..Resource::EMPTY` (resources made at run time
    /// fill in every field that matters).
    pub const EMPTY: Resource = DEFAULTS;
}

/// The resources listwatch serves.
pub static BUILTIN: &[Resource] = &[
    resource! {
        plural: "namespaces", singular: "namespace", kind: "Namespace", short_names: &["ns"],
        namespaced: false, verbs: NO_COLLECTION_DELETE, subresources: &[Subresource::Status],
        storage_prefix: "namespaces", selectable_fields: &["status.phase"],
        printer_columns: &[NAME, col("Status", "string", Cell::NamespaceStatus), AGE],
        name_rule: NameRule::Label, protobuf: Some("k8s.io.api.core.v1.Namespace"),
    },
    resource! {
        plural: "pods", singular: "pod", kind: "Pod", short_names: &["po"], categories: &["all"],
        subresources: &[Subresource::Binding, Subresource::Status], storage_prefix: "pods",
        selectable_fields: &[
            "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
            "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
        ],
        printer_columns: &[
            NAME,
            col("Ready", "string", Cell::PodReady),
            col("Status", "string", Cell::PodStatus),
            col("Restarts", "string", Cell::PodRestarts),
            AGE,
            PrinterColumn { priority: 1, ..col("IP", "string", Cell::Path("status.podIP")) },
            PrinterColumn { priority: 1, ..col("Node", "string", Cell::Path("spec.nodeName")) },
        ],
        delete_returns_object: true, graceful_deletion: true,
        protobuf: Some("k8s.io.api.core.v1.Pod"),
    },
    resource! {
        plural: "configmaps", singular: "configmap", kind: "ConfigMap", short_names: &["cm"],
        storage_prefix: "configmaps",
        printer_columns: &[NAME, col("Data", "integer", Cell::MapLen("data", "binaryData")), AGE],
        protobuf: Some("k8s.io.api.core.v1.ConfigMap"),
    },
    resource! {
        plural: "secrets", singular: "secret", kind: "Secret", storage_prefix: "secrets",
        selectable_fields: &["type"],
        printer_columns: &[NAME, col("Type", "string", Cell::Path("type")), col("Data", "integer", Cell::MapLen("data", "stringData")), AGE],
        protobuf: Some("k8s.io.api.core.v1.Secret"),
    },
    resource! {
        plural: "services", singular: "service", kind: "Service", short_names: &["svc"], categories: &["all"],
        subresources: &[Subresource::Status], storage_prefix: "services/specs",
        selectable_fields: &["spec.clusterIP", "spec.type"],
        printer_columns: &[
            NAME,
            col("Type", "string", Cell::Path("spec.type")),
            col("Cluster-IP", "string", Cell::Path("spec.clusterIP")),
            col("External-IP", "string", Cell::ServiceExternalIp),
            col("Port(s)", "string", Cell::ServicePorts),
            AGE,
        ],
        name_rule: NameRule::Dns1035Label,
        protobuf: Some("k8s.io.api.core.v1.Service"),
    },
    resource! {
        plural: "endpoints", singular: "endpoints", kind: "Endpoints", short_names: &["ep"],
        storage_prefix: "services/endpoints", allow_create_on_update: true,
        printer_columns: &[NAME, col("Endpoints", "string", Cell::EndpointsAddresses), AGE],
        protobuf: Some("k8s.io.api.core.v1.Endpoints"),
    },
    resource! {
        plural: "events", singular: "event", kind: "Event", short_names: &["ev"], storage_prefix: "events",
        selectable_fields: &[
            "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
            "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
            "reason", "reportingComponent", "source", "type",
        ],
        watch_cache: false, protobuf: Some("k8s.io.api.core.v1.Event"), allow_create_on_update: true,
    },
    resource! {
        plural: "nodes", singular: "node", kind: "Node", short_names: &["no"], namespaced: false,
        subresources: &[Subresource::Status], storage_prefix: "minions",
        selectable_fields: &["spec.unschedulable"],
        printer_columns: &[
            NAME,
            col("Status", "string", Cell::NodeStatus),
            col("Roles", "string", Cell::NodeRoles),
            AGE,
            col("Version", "string", Cell::Path("status.nodeInfo.kubeletVersion")),
        ],
        protobuf: Some("k8s.io.api.core.v1.Node"),
    },
    resource! {
        plural: "serviceaccounts", singular: "serviceaccount", kind: "ServiceAccount", short_names: &["sa"],
        storage_prefix: "serviceaccounts", delete_returns_object: true, protobuf: Some("k8s.io.api.core.v1.ServiceAccount"),
        subresources: &[Subresource::Token],
        printer_columns: &[NAME, col("Secrets", "integer", Cell::ListLen("secrets")), AGE],
    },
    resource! {
        group: "apps", plural: "deployments", singular: "deployment", kind: "Deployment",
        short_names: &["deploy"], categories: &["all"],
        subresources: &[Subresource::Status, Subresource::Scale], storage_prefix: "deployments",
        printer_columns: &[
            NAME,
            col("Ready", "string", Cell::ReadyOfDesired),
            col("Up-to-date", "integer", Cell::Int("status.updatedReplicas")),
            col("Available", "integer", Cell::Int("status.availableReplicas")),
            AGE,
        ],
        protobuf: Some("k8s.io.api.apps.v1.Deployment"),
    },
    resource! {
        group: "apps", plural: "replicasets", singular: "replicaset", kind: "ReplicaSet",
        short_names: &["rs"], categories: &["all"],
        subresources: &[Subresource::Status, Subresource::Scale], storage_prefix: "replicasets",
        selectable_fields: &["status.replicas"],
        printer_columns: &[
            NAME,
            col("Desired", "integer", Cell::Int("spec.replicas")),
            col("Current", "integer", Cell::Int("status.replicas")),
            col("Ready", "integer", Cell::Int("status.readyReplicas")),
            AGE,
        ],
        protobuf: Some("k8s.io.api.apps.v1.ReplicaSet"),
    },
    // kube-aggregator's group priorities order `/apis`: authentication.k8s.io (17700),
    // authorization.k8s.io (17600) and rbac.authorization.k8s.io (17000) come after apps
    // (17800). The reviews are not stored: POST answers them (`authz::reviews`).
    resource! {
        group: "authentication.k8s.io", plural: "selfsubjectreviews", singular: "selfsubjectreview",
        kind: "SelfSubjectReview", namespaced: false, verbs: CREATE_ONLY,
        storage_prefix: "selfsubjectreviews", watch_cache: false,
    },
    resource! {
        group: "authentication.k8s.io", plural: "tokenreviews", singular: "tokenreview", kind: "TokenReview",
        namespaced: false, verbs: CREATE_ONLY, storage_prefix: "tokenreviews", watch_cache: false,
    },
    resource! {
        group: "authorization.k8s.io", plural: "localsubjectaccessreviews", singular: "localsubjectaccessreview",
        kind: "LocalSubjectAccessReview", verbs: CREATE_ONLY,
        storage_prefix: "localsubjectaccessreviews", watch_cache: false,
    },
    resource! {
        group: "authorization.k8s.io", plural: "selfsubjectaccessreviews", singular: "selfsubjectaccessreview",
        kind: "SelfSubjectAccessReview", namespaced: false, verbs: CREATE_ONLY,
        storage_prefix: "selfsubjectaccessreviews", watch_cache: false,
    },
    resource! {
        group: "authorization.k8s.io", plural: "selfsubjectrulesreviews", singular: "selfsubjectrulesreview",
        kind: "SelfSubjectRulesReview", namespaced: false, verbs: CREATE_ONLY,
        storage_prefix: "selfsubjectrulesreviews", watch_cache: false,
    },
    resource! {
        group: "authorization.k8s.io", plural: "subjectaccessreviews", singular: "subjectaccessreview",
        kind: "SubjectAccessReview", namespaced: false, verbs: CREATE_ONLY,
        storage_prefix: "subjectaccessreviews", watch_cache: false,
    },
    resource! {
        group: "rbac.authorization.k8s.io", plural: "clusterrolebindings", singular: "clusterrolebinding",
        kind: "ClusterRoleBinding", namespaced: false, storage_prefix: "clusterrolebindings",
        name_rule: NameRule::PathSegment, printer_columns: BINDING_COLUMNS,
    },
    resource! {
        group: "rbac.authorization.k8s.io", plural: "clusterroles", singular: "clusterrole", kind: "ClusterRole",
        namespaced: false, storage_prefix: "clusterroles", name_rule: NameRule::PathSegment,
        printer_columns: &[NAME, CREATED_AT],
    },
    resource! {
        group: "rbac.authorization.k8s.io", plural: "rolebindings", singular: "rolebinding", kind: "RoleBinding",
        storage_prefix: "rolebindings", name_rule: NameRule::PathSegment, printer_columns: BINDING_COLUMNS,
    },
    resource! {
        group: "rbac.authorization.k8s.io", plural: "roles", singular: "role", kind: "Role",
        storage_prefix: "roles", name_rule: NameRule::PathSegment, printer_columns: &[NAME, CREATED_AT],
    },
    // admissionregistration.k8s.io and apiextensions.k8s.io share priority 16700 and are
    // ordered by name; coordination.k8s.io (16500) follows. kube prints a webhook
    // configuration with the number of its webhooks.
    resource! {
        group: "admissionregistration.k8s.io", plural: "mutatingwebhookconfigurations",
        singular: "mutatingwebhookconfiguration", kind: "MutatingWebhookConfiguration",
        categories: &["api-extensions"], namespaced: false,
        storage_prefix: "mutatingwebhookconfigurations", printer_columns: WEBHOOK_CONFIGURATION_COLUMNS,
    },
    resource! {
        group: "admissionregistration.k8s.io", plural: "validatingwebhookconfigurations",
        singular: "validatingwebhookconfiguration", kind: "ValidatingWebhookConfiguration",
        categories: &["api-extensions"], namespaced: false,
        storage_prefix: "validatingwebhookconfigurations", printer_columns: WEBHOOK_CONFIGURATION_COLUMNS,
    },
    resource! {
        group: "admissionregistration.k8s.io", plural: "validatingadmissionpolicies",
        singular: "validatingadmissionpolicy", kind: "ValidatingAdmissionPolicy",
        categories: &["api-extensions"], namespaced: false, subresources: &[Subresource::Status],
        storage_prefix: "validatingadmissionpolicies",
        printer_columns: &[
            NAME,
            col("Validations", "integer", Cell::ListLen("spec.validations")),
            col("ParamKind", "string", Cell::ParamKind),
            AGE,
        ],
    },
    resource! {
        group: "admissionregistration.k8s.io", plural: "validatingadmissionpolicybindings",
        singular: "validatingadmissionpolicybinding", kind: "ValidatingAdmissionPolicyBinding",
        categories: &["api-extensions"], namespaced: false,
        storage_prefix: "validatingadmissionpolicybindings",
        printer_columns: &[
            NAME,
            col("PolicyName", "string", Cell::Path("spec.policyName")),
            col("ParamRef", "string", Cell::ParamRef),
            AGE,
        ],
    },
    resource! {
        group: "apiextensions.k8s.io", plural: "customresourcedefinitions", singular: "customresourcedefinition",
        kind: "CustomResourceDefinition", short_names: &["crd", "crds"], categories: &["api-extensions"],
        namespaced: false, subresources: &[Subresource::Status],
        storage_prefix: "apiextensions.k8s.io/customresourcedefinitions",
        printer_columns: &[NAME, CREATED_AT],
    },
    resource! {
        group: "coordination.k8s.io", plural: "leases", singular: "lease", kind: "Lease",
        storage_prefix: "leases", allow_create_on_update: true,
        printer_columns: &[NAME, col("Holder", "string", Cell::Path("spec.holderIdentity")), AGE],
        protobuf: Some("k8s.io.api.coordination.v1.Lease"),
    },
];

/// Looks resources up by group, version and plural.
#[derive(Clone, Copy, Debug, Default)]
pub struct Registry;

impl Registry {
    /// Every resource served, in registration order.
    pub fn resources(&self) -> &'static [Resource] {
        BUILTIN
    }

    /// The resource served at `/apis/<group>/<version>/<plural>` (or `/api/v1/<plural>`).
    pub fn find(&self, group: &str, version: &str, plural: &str) -> Option<&'static Resource> {
        BUILTIN.iter().find(|r| r.group == group && r.version == version && r.plural == plural)
    }

    /// The resource whose objects have `kind` in `group`.
    pub fn find_kind(&self, group: &str, kind: &str) -> Option<&'static Resource> {
        BUILTIN.iter().find(|r| r.group == group && r.kind == kind)
    }

    /// The resource whose collection prefix `key` falls under (for a storage key read back).
    pub fn for_storage_key(&self, root: &str, key: &str) -> Option<&'static Resource> {
        BUILTIN.iter().find(|r| key.starts_with(&r.collection_prefix(root)))
    }

    /// Groups in discovery order (core first), each with its versions.
    pub fn groups(&self) -> Vec<(&'static str, Vec<&'static str>)> {
        let mut groups: Vec<(&'static str, Vec<&'static str>)> = Vec::new();
        for r in BUILTIN {
            match groups.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) if !versions.contains(&r.version) => versions.push(r.version),
                Some(_) => {}
                None => groups.push((r.group, vec![r.version])),
            }
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_keys_follow_kube_apiserver() {
        let reg = Registry;
        let pods = reg.find("", "v1", "pods").unwrap();
        assert_eq!(pods.object_key("/registry", Some("default"), "nginx"), "/registry/pods/default/nginx");
        let deploy = reg.find("apps", "v1", "deployments").unwrap();
        assert_eq!(deploy.object_key("/registry", Some("default"), "web"), "/registry/deployments/default/web");
        let svc = reg.find("", "v1", "services").unwrap();
        assert_eq!(svc.collection_prefix("/registry"), "/registry/services/specs/");
        let nodes = reg.find("", "v1", "nodes").unwrap();
        assert_eq!(nodes.object_key("/registry", None, "n1"), "/registry/minions/n1");
    }

    #[test]
    fn a_prefix_never_matches_a_longer_resource_name() {
        // `/registry/pods/` must not cover `/registry/podtemplates/...`.
        let reg = Registry;
        assert!(reg.for_storage_key("/registry", "/registry/podtemplates/default/x").is_none());
        assert_eq!(reg.for_storage_key("/registry", "/registry/pods/default/x").unwrap().plural, "pods");
        // Services and endpoints share `services/` but not a prefix.
        assert_eq!(reg.for_storage_key("/registry", "/registry/services/endpoints/ns/a").unwrap().plural, "endpoints");
    }

    #[test]
    fn every_resource_is_complete() {
        for r in BUILTIN {
            assert!(!r.plural.is_empty() && !r.kind.is_empty() && !r.storage_prefix.is_empty(), "{r:?}");
            assert!(r.printer_columns.first().is_some_and(|c| c.cell == Cell::Name));
        }
    }
}
