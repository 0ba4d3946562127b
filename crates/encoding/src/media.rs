//! Content negotiation (kube-apiserver's `negotiation` package, reduced to what it serves).
//!
//! An `Accept` header is a list of media ranges; the first one (by `q`, then order) that the
//! server can produce for this request wins. Parameters select a representation:
//! `as=Table;v=v1|v1beta1;g=meta.k8s.io` (server-side printing), `as=PartialObjectMetadata` /
//! `as=PartialObjectMetadataList` (metadata only), `stream=watch` (allowed, only for watches).
//! A range the server cannot produce is skipped; when none is left the answer is 406.

use listwatch_meta::{ApiError, Resource};

/// The wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// JSON (`application/json`).
    Json,
    /// Kubernetes protobuf (`application/vnd.kubernetes.protobuf`), for built-in kinds with a
    /// schema.
    Protobuf,
    /// YAML (`application/yaml`): the JSON converted (`yaml.rs`); never for watches.
    Yaml,
}

/// What a Table row carries as its object (`includeObject`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncludeObject {
    /// No object: the row has only its cells.
    None,
    /// The object's metadata as a `PartialObjectMetadata` (kube's default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The value of an `includeObject` parameter (empty means `Metadata`); `None` if unknown.
    pub fn parse(s: &str) -> Option<IncludeObject> {
        match s {
            "None" => Some(IncludeObject::None),
            "Metadata" | "" => Some(IncludeObject::Metadata),
            "Object" => Some(IncludeObject::Object),
            _ => None,
        }
    }
}

/// The representation of the response body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The object or list itself.
    Object,
    /// A `meta.k8s.io` Table (server-side printing, as kubectl asks for it).
    Table {
        /// `v1beta1` instead of `v1` (older kubectls ask for it).
        v1beta1: bool,
        /// What each row carries as its object.
        include: IncludeObject,
    },
    /// The object's metadata only, as a `PartialObjectMetadata`.
    PartialObjectMetadata {
        /// `v1beta1` instead of `v1`.
        v1beta1: bool,
    },
    /// The metadata of each item of a list, as a `PartialObjectMetadataList`.
    PartialObjectMetadataList {
        /// `v1beta1` instead of `v1`.
        v1beta1: bool,
    },
}

/// A negotiated response format: the wire format and the representation in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaType {
    /// How the body is encoded.
    pub wire: Wire,
    /// What the body represents.
    pub output: Output,
}

impl MediaType {
    /// Plain JSON of the object itself: what a request without `Accept` gets.
    pub const JSON: MediaType = MediaType { wire: Wire::Json, output: Output::Object };

    /// `Content-Type` of a non-streaming response.
    pub fn content_type(&self) -> &'static str {
        match (self.wire, self.output) {
            (Wire::Json, Output::Object) => "application/json",
            (Wire::Json, Output::Table { v1beta1: false, .. }) => "application/json;as=Table;v=v1;g=meta.k8s.io",
            (Wire::Json, Output::Table { v1beta1: true, .. }) => "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
            (Wire::Json, Output::PartialObjectMetadata { v1beta1: false }) => {
                "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
            }
            (Wire::Json, Output::PartialObjectMetadata { v1beta1: true }) => {
                "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io"
            }
            (Wire::Json, Output::PartialObjectMetadataList { v1beta1: false }) => {
                "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
            }
            (Wire::Json, Output::PartialObjectMetadataList { v1beta1: true }) => {
                "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io"
            }
            (Wire::Protobuf, _) => "application/vnd.kubernetes.protobuf",
            (Wire::Yaml, _) => "application/yaml",
        }
    }

    /// `Content-Type` of a watch stream (JSON: exactly `application/json`).
    pub fn stream_content_type(&self) -> &'static str {
        match self.wire {
            Wire::Json | Wire::Yaml => "application/json",
            Wire::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
        }
    }
}

/// What kind of request the response is for: the representations allowed differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Get,
    List,
    Watch,
}

/// The outcome of negotiation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The media type chosen.
    pub media: MediaType,
}

/// Negotiates a non-streaming response for a GET (`list == false`) or LIST.
pub fn negotiate(accept: Option<&str>, resource: &Resource, list: bool) -> Result<MediaType, ApiError> {
    negotiate_for(accept, resource, if list { Target::List } else { Target::Get })
}

/// Negotiates a watch stream.
pub fn negotiate_stream(accept: Option<&str>, resource: &Resource) -> Result<MediaType, ApiError> {
    negotiate_for(accept, resource, Target::Watch)
}

struct Range<'a> {
    type_: &'a str,
    subtype: &'a str,
    params: Vec<(&'a str, &'a str)>,
    q: f32,
}

fn parse_accept(accept: &str) -> Vec<Range<'_>> {
    let mut ranges: Vec<Range> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';').map(str::trim);
            let (type_, subtype) = parts.next()?.split_once('/')?;
            let mut params = Vec::new();
            let mut q = 1.0;
            for p in parts {
                let Some((k, v)) = p.split_once('=') else { continue };
                let (k, v) = (k.trim(), v.trim().trim_matches('"'));
                if k == "q" {
                    q = v.parse().unwrap_or(0.0);
                } else {
                    params.push((k, v));
                }
            }
            Some(Range { type_, subtype, params, q })
        })
        .collect();
    // Stable: equal q keeps the client's order.
    ranges.sort_by(|a, b| b.q.partial_cmp(&a.q).unwrap_or(std::cmp::Ordering::Equal));
    ranges
}

fn negotiate_for(accept: Option<&str>, resource: &Resource, target: Target) -> Result<MediaType, ApiError> {
    let accept = accept.map(str::trim).filter(|a| !a.is_empty()).unwrap_or("*/*");
    for range in parse_accept(accept) {
        if range.q <= 0.0 {
            continue;
        }
        if let Some(media) = acceptable(&range, resource, target) {
            return Ok(media);
        }
        // kube picks YAML here, which has no watch serializer: the stream negotiation fails
        // (a YAML range asking for a stream was skipped instead).
        let streams = range.params.iter().any(|(k, v)| *k == "stream" && !v.is_empty());
        if target == Target::Watch && (range.type_, range.subtype) == ("application", "yaml") && !streams {
            return Err(ApiError::not_acceptable(
                "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
            ));
        }
    }
    // A watch is a list first: the list's negotiation fails, with the list's media types.
    Err(ApiError::not_acceptable(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    ))
}

fn acceptable(range: &Range, resource: &Resource, target: Target) -> Option<MediaType> {
    let wire = match (range.type_, range.subtype) {
        ("application", "json" | "*") | ("*", "*") => Wire::Json,
        ("application", "vnd.kubernetes.protobuf") if has_schema(resource) => Wire::Protobuf,
        ("application", "yaml") if target != Target::Watch => Wire::Yaml,
        _ => return None,
    };
    let param = |name: &str| range.params.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
    if let Some(stream) = param("stream")
        && (stream != "watch" || target != Target::Watch)
    {
        return None;
    }
    let output = match param("as") {
        None => Output::Object,
        Some(as_) => {
            if param("g") != Some("meta.k8s.io") {
                return None;
            }
            let v1beta1 = match param("v") {
                Some("v1") => false,
                Some("v1beta1") => true,
                _ => return None,
            };
            match (as_, target) {
                ("Table", _) => Output::Table { v1beta1, include: IncludeObject::Metadata },
                ("PartialObjectMetadata", Target::Get | Target::Watch) => Output::PartialObjectMetadata { v1beta1 },
                ("PartialObjectMetadataList", Target::List) => Output::PartialObjectMetadataList { v1beta1 },
                _ => return None,
            }
        }
    };
    // Tables and metadata-only objects are served as JSON (what kubectl and metadata
    // informers ask for); a protobuf range for them is skipped.
    if wire == Wire::Protobuf && output != Output::Object {
        return None;
    }
    Some(MediaType { wire, output })
}

/// Whether the kind has a protobuf schema. Kinds without one answer as kube-apiserver does
/// for custom resources: JSON when the client also accepts it, else 406.
pub fn has_schema(resource: &Resource) -> bool {
    listwatch_proto::message_for(resource.group, resource.version, resource.kind).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use listwatch_meta::Registry;

    fn pods() -> &'static Resource {
        Registry.find("", "v1", "pods").unwrap()
    }

    #[test]
    fn protobuf_only_for_kinds_with_a_schema() {
        let cms = Registry.find("", "v1", "configmaps").unwrap();
        assert_eq!(negotiate(Some("application/vnd.kubernetes.protobuf"), cms, false).unwrap().wire, Wire::Protobuf);
        let both = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io";
        assert_eq!(negotiate(Some(both), cms, true).unwrap().wire, Wire::Json);
    }

    #[test]
    fn kubectl_get_asks_for_a_table_with_json_fallback() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let m = negotiate(Some(accept), pods(), true).unwrap();
        assert_eq!(m.output, Output::Table { v1beta1: false, include: IncludeObject::Metadata });
    }

    #[test]
    fn metadata_lists_and_watches() {
        let list =
            negotiate(Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"), pods(), true).unwrap();
        assert_eq!(list.output, Output::PartialObjectMetadataList { v1beta1: false });
        // A list cannot be answered as a single PartialObjectMetadata: the next range wins.
        let m = negotiate(
            Some("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"),
            pods(),
            true,
        )
        .unwrap();
        assert_eq!(m.output, Output::Object);
    }

    #[test]
    fn yaml_only_watch_is_406_and_stream_param_only_for_watches() {
        assert_eq!(negotiate_stream(Some("application/yaml"), pods()).unwrap_err().code(), 406);
        assert!(negotiate_stream(Some("application/json;stream=watch"), pods()).is_ok());
        assert_eq!(negotiate(Some("application/json;stream=watch"), pods(), false).unwrap_err().code(), 406);
        assert_eq!(negotiate(Some("text/html"), pods(), false).unwrap_err().code(), 406);
    }
}
