//! YAML responses and request bodies (`application/yaml`), as kube-apiserver makes them: the
//! JSON encoding converted, so keys come out sorted (Go's YAML marshaller sorts map keys), one
//! document without `---`. There is no YAML watch stream (a watch that accepts only YAML is a
//! 406 at negotiation), and PATCH bodies are never YAML except apply patches.

use bytes::Bytes;
use serde_json::{Map, Value};

/// The JSON `json` as YAML; `json` itself if it is not JSON (it always is when it comes from
/// an encoder).
pub fn from_json(json: &[u8]) -> Bytes {
    let Ok(value) = serde_json::from_slice::<Value>(json) else { return Bytes::copy_from_slice(json) };
    match serde_yaml_ng::to_string(&sorted(value)) {
        Ok(text) => Bytes::from(text),
        Err(_) => Bytes::copy_from_slice(json),
    }
}

/// A YAML request body as JSON bytes, or the YAML parser's error text.
pub fn to_json(yaml: &[u8]) -> Result<Vec<u8>, String> {
    let value: Value = serde_yaml_ng::from_slice(yaml).map_err(|e| format!("yaml: {e}"))?;
    serde_json::to_vec(&value).map_err(|e| e.to_string())
}

/// `value` with every object's keys in sorted order (serde_json here keeps insertion order).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect::<Map<_, _>>())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_are_yaml_with_sorted_keys() {
        let yaml =
            from_json(br#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"b":"1","a":"2"}}"#);
        assert_eq!(
            std::str::from_utf8(&yaml).unwrap(),
            "apiVersion: v1\ndata:\n  a: '2'\n  b: '1'\nkind: ConfigMap\nmetadata:\n  name: a\n"
        );
    }

    #[test]
    fn request_bodies_become_json() {
        let json = to_json(b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  n: \"1\"\n").unwrap();
        let value: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(value["metadata"]["name"], "a");
        assert_eq!(value["data"]["n"], "1");
        assert!(to_json(b"a: [").unwrap_err().starts_with("yaml: "));
    }
}
