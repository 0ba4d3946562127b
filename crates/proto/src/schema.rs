//! The descriptor pool compiled from `proto/`, and a conversion plan per message.
//!
//! Walking prost-reflect descriptors directly on every conversion would mean reading field
//! options (a protobuf decode each time) and hashing names over and over. Instead the pool is
//! turned once, on first use, into a flat table of [`MessagePlan`]s: each message's fields in
//! declaration order (the Go struct order, which is the JSON key order kube-apiserver writes),
//! their order on the wire (ascending field number, as Go's generated marshallers write), the
//! Go-declaration facts from the `(listwatch.go_json)` option, and a name index for JSON keys.
//! Field types that refer to other messages hold the other message's index in the table.

use std::collections::HashMap;
use std::sync::LazyLock;

use prost_reflect::{DescriptorPool, FieldDescriptor, Kind, MessageDescriptor};

static DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/k8s.descriptor.bin"));

/// Built on first use; the descriptor set is compiled into the binary, so failing to load it
/// is a build defect, not a run-time condition.
pub(crate) static SCHEMA: LazyLock<Schema> = LazyLock::new(|| {
    let pool = DescriptorPool::decode(DESCRIPTOR_SET).expect("the embedded descriptor set is valid");
    Schema::build(pool)
});

pub(crate) const META_V1: &str = "k8s.io.apimachinery.pkg.apis.meta.v1";
pub(crate) const RUNTIME: &str = "k8s.io.apimachinery.pkg.runtime";

/// How the Go struct declares a field (see `proto/listwatch/go_json.proto`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoJson {
    OmitEmpty,
    Pointer,
    Always,
    Inline,
    AlwaysOrNull,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    UInt32,
    UInt64,
    SInt32,
    SInt64,
    Fixed32,
    Fixed64,
    SFixed32,
    SFixed64,
    Float,
    Double,
    Enum,
}

/// What one value of a field is: a scalar, or a message (index into [`Schema::messages`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum ValueType {
    Scalar(Scalar),
    Message(usize),
}

#[derive(Clone, Copy, Debug)]
pub(crate) enum Cardinality {
    Single,
    Repeated,
    /// `map<key, value>`; on the wire a repeated entry message {1: key, 2: value}.
    Map {
        key: Scalar,
    },
}

/// Messages whose Kubernetes JSON form is not "an object of their fields".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    /// metav1.Time: RFC 3339 string, seconds precision.
    Time,
    /// metav1.MicroTime: RFC 3339 string with exactly six fractional digits.
    MicroTime,
    /// resource.Quantity: its string form.
    Quantity,
    /// intstr.IntOrString: a JSON number or string.
    IntOrString,
    /// runtime.RawExtension: embedded JSON, held on the wire as its bytes.
    RawExtension,
    /// metav1.FieldsV1: embedded JSON (the managed-fields trie), held as its bytes.
    FieldsV1,
    /// A named `[]string` that the proto wraps in a message of one `repeated string items = 1`
    /// (authentication's and authorization's `ExtraValue`): the array of strings itself.
    StringList,
}

pub(crate) struct FieldPlan {
    /// The JSON key: the proto field name in Kubernetes protos, except where a `json_name`
    /// option says otherwise (authentication's `BoundObjectReference.uID` is `uid` in JSON).
    pub(crate) name: String,
    pub(crate) number: u32,
    pub(crate) go: GoJson,
    pub(crate) value: ValueType,
    pub(crate) cardinality: Cardinality,
    pub(crate) descriptor: FieldDescriptor,
}

pub(crate) struct MessagePlan {
    pub(crate) descriptor: MessageDescriptor,
    pub(crate) special: Option<Special>,
    /// Declaration order: the order JSON keys are written in.
    pub(crate) fields: Vec<FieldPlan>,
    /// Indices into `fields`, by ascending field number: the order fields are written on the wire.
    pub(crate) wire_order: Vec<usize>,
    by_name: HashMap<String, usize>,
    inline: Vec<usize>,
}

/// Where a JSON key of an object lands: field `field` of message `message` (which is the
/// object's own message, or one reached through `json:",inline"` fields).
#[derive(Clone, Copy, Debug)]
pub(crate) struct JsonKey {
    pub(crate) message: usize,
    pub(crate) field: usize,
}

pub(crate) struct Schema {
    pub(crate) pool: DescriptorPool,
    pub(crate) messages: Vec<MessagePlan>,
    by_name: HashMap<String, usize>,
}

impl Schema {
    fn build(pool: DescriptorPool) -> Schema {
        let go_json = pool.get_extension_by_name("listwatch.go_json").expect("listwatch/go_json.proto is compiled in");
        let descriptors: Vec<MessageDescriptor> = pool.all_messages().filter(|m| !m.is_map_entry()).collect();
        let by_name: HashMap<String, usize> =
            descriptors.iter().enumerate().map(|(index, m)| (m.full_name().to_owned(), index)).collect();

        let scalar = |kind: &Kind| -> Option<Scalar> {
            Some(match kind {
                Kind::String => Scalar::String,
                Kind::Bytes => Scalar::Bytes,
                Kind::Bool => Scalar::Bool,
                Kind::Int32 => Scalar::Int32,
                Kind::Int64 => Scalar::Int64,
                Kind::Uint32 => Scalar::UInt32,
                Kind::Uint64 => Scalar::UInt64,
                Kind::Sint32 => Scalar::SInt32,
                Kind::Sint64 => Scalar::SInt64,
                Kind::Fixed32 => Scalar::Fixed32,
                Kind::Fixed64 => Scalar::Fixed64,
                Kind::Sfixed32 => Scalar::SFixed32,
                Kind::Sfixed64 => Scalar::SFixed64,
                Kind::Float => Scalar::Float,
                Kind::Double => Scalar::Double,
                Kind::Enum(_) => Scalar::Enum,
                Kind::Message(_) => return None,
            })
        };
        let value_type = |kind: &Kind| -> ValueType {
            match kind {
                Kind::Message(m) => ValueType::Message(by_name[m.full_name()]),
                other => ValueType::Scalar(scalar(other).expect("a scalar kind")),
            }
        };

        let messages = descriptors
            .iter()
            .map(|descriptor| {
                // Declaration order comes from the raw DescriptorProto; prost-reflect's own
                // field iterator is in number order.
                let fields: Vec<FieldPlan> = descriptor
                    .descriptor_proto()
                    .field
                    .iter()
                    .map(|raw| {
                        let field = descriptor.get_field(raw.number() as u32).expect("declared field");
                        let options = field.options();
                        let go = if options.has_extension(&go_json) {
                            match options.get_extension(&go_json).as_enum_number() {
                                Some(1) => GoJson::Pointer,
                                Some(2) => GoJson::Always,
                                Some(3) => GoJson::Inline,
                                Some(4) => GoJson::AlwaysOrNull,
                                _ => GoJson::OmitEmpty,
                            }
                        } else {
                            GoJson::OmitEmpty
                        };
                        let (value, cardinality) = match field.kind() {
                            Kind::Message(entry) if field.is_map() => {
                                let key = scalar(&entry.map_entry_key_field().kind()).expect("map keys are scalars");
                                (value_type(&entry.map_entry_value_field().kind()), Cardinality::Map { key })
                            }
                            kind if field.is_list() => (value_type(&kind), Cardinality::Repeated),
                            kind => (value_type(&kind), Cardinality::Single),
                        };
                        FieldPlan {
                            name: field.json_name().to_owned(),
                            number: field.number(),
                            go,
                            value,
                            cardinality,
                            descriptor: field,
                        }
                    })
                    .collect();
                let mut wire_order: Vec<usize> = (0..fields.len()).collect();
                wire_order.sort_by_key(|&i| fields[i].number);
                let by_name = fields.iter().enumerate().map(|(i, f)| (f.name.clone(), i)).collect();
                let inline =
                    fields.iter().enumerate().filter(|(_, f)| f.go == GoJson::Inline).map(|(i, _)| i).collect();
                MessagePlan {
                    descriptor: descriptor.clone(),
                    special: special_for(descriptor.full_name()),
                    fields,
                    wire_order,
                    by_name,
                    inline,
                }
            })
            .collect();
        Schema { pool, messages, by_name }
    }

    pub(crate) fn message_index(&self, full_name: &str) -> Option<usize> {
        self.by_name.get(full_name).copied()
    }

    /// The message for a kind: `k8s.io.api.<package>.<version>.<Kind>`, where the package is
    /// the group's first DNS label (`apps`, `coordination.k8s.io` → `coordination`, core →
    /// `core`), which is how the Kubernetes API packages are laid out. `Status` and
    /// `DeleteOptions` are served in every group-version and live in meta/v1.
    pub(crate) fn kind_index(&self, group: &str, version: &str, kind: &str) -> Option<usize> {
        let package = if group.is_empty() { "core" } else { group.split('.').next().unwrap_or(group) };
        self.message_index(&format!("k8s.io.api.{package}.{version}.{kind}")).or_else(|| match kind {
            "Status" | "DeleteOptions" => self.message_index(&format!("{META_V1}.{kind}")),
            _ => None,
        })
    }

    /// Resolves a JSON key of an object of message `message`, looking through inline fields.
    pub(crate) fn json_key(&self, message: usize, key: &str) -> Option<JsonKey> {
        let plan = &self.messages[message];
        if let Some(&field) = plan.by_name.get(key) {
            if plan.fields[field].go != GoJson::Inline {
                return Some(JsonKey { message, field });
            }
        }
        plan.inline.iter().find_map(|&i| match plan.fields[i].value {
            ValueType::Message(inner) => self.json_key(inner, key),
            ValueType::Scalar(_) => None,
        })
    }
}

fn special_for(full_name: &str) -> Option<Special> {
    let (package, name) = full_name.rsplit_once('.')?;
    match (package, name) {
        (META_V1, "Time") => Some(Special::Time),
        (META_V1, "MicroTime") => Some(Special::MicroTime),
        (META_V1, "FieldsV1") => Some(Special::FieldsV1),
        ("k8s.io.apimachinery.pkg.api.resource", "Quantity") => Some(Special::Quantity),
        ("k8s.io.apimachinery.pkg.util.intstr", "IntOrString") => Some(Special::IntOrString),
        (RUNTIME, "RawExtension") => Some(Special::RawExtension),
        ("k8s.io.api.authentication.v1" | "k8s.io.api.authorization.v1", "ExtraValue") => Some(Special::StringList),
        _ => None,
    }
}

/// The JSON `apiVersion` of a group and version: `v1` for the core group, `apps/v1` otherwise.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }
}
