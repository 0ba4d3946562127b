//! Which objects a watch or a client sees: a resource, optionally one namespace, a label selector
//! and a field selector, parsed with the server's own selector code so the checker filters exactly
//! as kube-apiserver does.
//!
//! Field selectors may only use `metadata.name` and `metadata.namespace`: every resource supports
//! those two, and the change log carries nothing else a field could be read from.

use std::collections::BTreeMap;

use listwatch_meta::selector::{FieldSelector, LabelSelector};

use crate::record::{ClientRecord, HistoryEvent, WatchRequest};

/// The fields a field selector may name here.
const SELECTABLE_FIELDS: [&str; 2] = ["metadata.name", "metadata.namespace"];

/// What a scope is made of, as the records spell it; equal texts make equal scopes, so the
/// checker filters history once per distinct scope rather than once per watch.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ScopeText {
    pub(crate) group: String,
    pub(crate) resource: String,
    /// `None` for all namespaces (`""` is read as all namespaces too, as the API does).
    pub(crate) namespace: Option<String>,
    pub(crate) label_selector: String,
    pub(crate) field_selector: String,
}

impl ScopeText {
    pub(crate) fn of_watch(request: &WatchRequest) -> ScopeText {
        ScopeText::new(
            &request.group,
            &request.resource,
            request.namespace.as_deref(),
            request.label_selector.as_deref(),
            request.field_selector.as_deref(),
        )
    }

    pub(crate) fn of_client(client: &ClientRecord) -> ScopeText {
        ScopeText::new(
            &client.group,
            &client.resource,
            client.namespace.as_deref(),
            client.label_selector.as_deref(),
            client.field_selector.as_deref(),
        )
    }

    pub(crate) fn new(
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> ScopeText {
        ScopeText {
            group: group.to_owned(),
            resource: resource.to_owned(),
            namespace: namespace.filter(|namespace| !namespace.is_empty()).map(str::to_owned),
            label_selector: label_selector.unwrap_or_default().to_owned(),
            field_selector: field_selector.unwrap_or_default().to_owned(),
        }
    }
}

/// A parsed scope, ready to test objects against.
#[derive(Debug)]
pub(crate) struct Scope {
    pub(crate) group: String,
    pub(crate) resource: String,
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Scope {
    /// Parses the selectors; the error says why the scope cannot be judged.
    pub(crate) fn parse(text: &ScopeText) -> Result<Scope, String> {
        let labels = LabelSelector::parse(&text.label_selector)
            .map_err(|error| format!("labelSelector {:?} does not parse: {error}", text.label_selector))?;
        let fields = FieldSelector::parse(&text.field_selector)
            .map_err(|error| format!("fieldSelector {:?} does not parse: {error}", text.field_selector))?;
        if let Some(field) = fields.fields().into_iter().find(|field| !SELECTABLE_FIELDS.contains(field)) {
            return Err(format!(
                "fieldSelector {:?} uses {field}: the checker filters by metadata.name and metadata.namespace only",
                text.field_selector
            ));
        }
        Ok(Scope {
            group: text.group.clone(),
            resource: text.resource.clone(),
            namespace: text.namespace.clone(),
            labels,
            fields,
        })
    }

    /// Whether a write is to this scope's resource (whatever the object's namespace or labels).
    pub(crate) fn holds_resource_of(&self, event: &HistoryEvent) -> bool {
        event.group == self.group && event.resource == self.resource
    }

    /// Whether an object of this scope's resource, with these labels, is in the scope.
    pub(crate) fn matches(&self, namespace: &str, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.namespace.as_deref().is_none_or(|wanted| wanted == namespace)
            && self.labels.matches_with(|key| labels.get(key).map(String::as_str))
            && self.fields.matches(|field| match field {
                "metadata.name" => Some(name.to_owned()),
                "metadata.namespace" => Some(namespace.to_owned()),
                _ => None,
            })
    }
}
