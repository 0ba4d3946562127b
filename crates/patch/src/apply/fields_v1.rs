//! FieldsV1: how a [`FieldSet`] is written into `metadata.managedFields`.
//!
//! The set is a trie written as nested JSON objects (SMD's
//! `fieldpath/serialize.go`): each child is keyed by its serialized path
//! element (`f:name`, `k:{"name":"x"}`, `v:"x"`, `i:0`), a leaf member is
//! `{}`, and a node that is itself a member and has children carries a
//! `"."` key first. Siblings follow SMD's element order (not the order of
//! their texts: `i:2` comes before `i:10`), so the output is byte for byte
//! what kube writes.

use listwatch_gocompat::json::{Escaping, marshal, quote};
use serde_json::{Map, Value};

use super::fieldpath::{FieldSet, PathElement};

/// structured-merge-diff writes path elements with json-iterator.
const JSON: Escaping = Escaping::JsonIterator;

/// The FieldsV1 key of one path element: `f:name`, `k:{…}`, `v:…` or `i:N`,
/// with the JSON inside written as Go writes it.
pub fn element_key(element: &PathElement) -> String {
    match element {
        PathElement::Field(name) => format!("f:{name}"),
        PathElement::Key(fields) => {
            let inner: Vec<String> =
                fields.iter().map(|(name, value)| format!("{}:{}", quote(name, JSON), marshal(value, JSON))).collect();
            format!("k:{{{}}}", inner.join(","))
        }
        PathElement::Value(value) => format!("v:{}", marshal(value, JSON)),
        PathElement::Index(index) => format!("i:{index}"),
    }
}

/// The FieldsV1 object of `set`, keys in kube's order.
pub fn encode(set: &FieldSet) -> Value {
    Value::Object(encode_contents(set, false))
}

/// The FieldsV1 JSON text of `set`, as kube stores it (compact).
pub fn encode_string(set: &FieldSet) -> String {
    serde_json::to_string(&encode(set)).unwrap_or_default()
}

fn encode_contents(set: &FieldSet, include_self: bool) -> Map<String, Value> {
    let mut out = Map::new();
    let (members, children) = (set.members(), set.children());
    if include_self && !(members.is_empty() && children.is_empty()) {
        out.insert(".".to_owned(), Value::Object(Map::new()));
    }
    // Members and children merged in element order; an element in both is
    // written once, as a child that is itself a member.
    let mut members = members.iter().peekable();
    let mut children = children.iter().peekable();
    loop {
        let take_member = match (members.peek(), children.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(member), Some((child, _))) => *member < *child,
        };
        if take_member {
            let member = members.next().expect("peeked");
            out.insert(element_key(member), Value::Object(Map::new()));
        } else {
            let (element, child) = children.next().expect("peeked");
            let is_member = members.peek().is_some_and(|member| *member == element);
            if is_member {
                members.next();
            }
            out.insert(element_key(element), Value::Object(encode_contents(child, is_member)));
        }
    }
    out
}

/// Why FieldsV1 could not be read; kube's text for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

/// Reads FieldsV1 into a set. Keys of unknown element types are skipped,
/// as kube skips them.
pub fn decode(fields: &Value) -> Result<FieldSet, DecodeError> {
    match fields {
        Value::Object(map) => Ok(decode_node(map)?.0.unwrap_or_default()),
        Value::Null => Ok(FieldSet::new()),
        other => Err(DecodeError(format!("ReadMapCB: expect {{ or n, but found {}", first_char(other)))),
    }
}

fn first_char(value: &Value) -> char {
    value.to_string().chars().next().unwrap_or(' ')
}

/// The children of a node and whether the node is itself a member (SMD's
/// `readIterV1`: a node without children is a member).
fn decode_node(map: &Map<String, Value>) -> Result<(Option<FieldSet>, bool), DecodeError> {
    let mut children: Option<FieldSet> = None;
    let mut is_member = false;
    for (key, value) in map {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(element) = decode_element(key)? else {
            continue;
        };
        let (grandchildren, child_is_member) = match value {
            Value::Object(inner) => decode_node(inner)?,
            _ => (None, true),
        };
        let node = children.get_or_insert_with(FieldSet::new);
        if child_is_member {
            node.insert_member(element.clone());
        }
        if let Some(grandchildren) = grandchildren {
            node.insert_child(element, grandchildren);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

/// SMD's `DeserializePathElement`; `None` for an unknown element type.
pub fn decode_element(key: &str) -> Result<Option<PathElement>, DecodeError> {
    let bytes = key.as_bytes();
    if bytes.len() < 2 {
        return Err(DecodeError("parsing key as path element: key must be 2 characters long:".to_owned()));
    }
    if bytes[1] != b':' {
        return Err(DecodeError(format!("parsing key as path element: missing colon: {key}")));
    }
    let rest = &key[2..];
    let invalid = |e: serde_json::Error| DecodeError(format!("parsing key as path element: {e}"));
    match bytes[0] {
        b'f' => Ok(Some(PathElement::Field(rest.to_owned()))),
        b'v' => Ok(Some(PathElement::Value(serde_json::from_str(rest).map_err(invalid)?))),
        b'k' => {
            let fields: Map<String, Value> = serde_json::from_str(rest).map_err(invalid)?;
            Ok(Some(PathElement::key(fields)))
        }
        b'i' => rest.parse().map(|i| Some(PathElement::Index(i))).map_err(|_| {
            DecodeError(format!("parsing key as path element: strconv.Atoi: parsing {rest:?}: invalid syntax"))
        }),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips_kube_fields_v1_byte_for_byte() {
        // A Deployment's entry as kube-controller-manager-era kubectl created it.
        let text = r#"{"f:metadata":{"f:annotations":{".":{},"f:kubectl.kubernetes.io/last-applied-configuration":{}},"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}}}"#;
        let set = decode(&serde_json::from_str(text).unwrap()).unwrap();
        assert_eq!(encode_string(&set), text);
        assert!(set.has(&[PathElement::field("spec"), PathElement::field("selector")]));
        assert!(!set.has(&[PathElement::field("spec")]));
    }

    #[test]
    fn orders_elements_not_texts() {
        let mut set = FieldSet::new();
        for i in [10, 2] {
            set.insert(&[PathElement::field("l"), PathElement::Index(i)]);
        }
        set.insert(&[PathElement::field("s"), PathElement::Value(json!("a<b"))]);
        set.insert(&[PathElement::field("s"), PathElement::Value(json!(5))]);
        assert_eq!(encode_string(&set), r#"{"f:l":{"i:2":{},"i:10":{}},"f:s":{"v:5":{},"v:\"a\\u003cb\"":{}}}"#);
    }

    #[test]
    fn path_elements_are_written_as_json_iterator_does() {
        // structured-merge-diff's json-iterator writes backspace and form feed as \u escapes.
        assert_eq!(element_key(&PathElement::Value(json!("\u{8}\u{c}"))), r#"v:"\u0008\u000c""#);
    }

    #[test]
    fn skips_unknown_and_rejects_malformed_keys() {
        let set = decode(&json!({"f:a": {}, "x:b": {}})).unwrap();
        assert_eq!(set.len(), 1);
        assert!(decode(&json!({"fa": {}})).is_err());
        assert!(decode(&json!({"k:{": {}})).is_err());
        assert!(decode(&json!({})).unwrap().is_empty());
    }
}
