//! Taints and tolerations read from JSON, as kube's `v1helper` matches them: what the
//! scheduler (which nodes a pod may go to) and the node lifecycle controller (which pods a
//! NoExecute taint evicts, and when) both ask.

use listwatch_client::DynamicObject;
use serde_json::Value;

/// The taint the node lifecycle controller puts on a node whose kubelet stopped reporting.
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// The taint of a node whose kubelet reports it not Ready.
pub const NOT_READY: &str = "node.kubernetes.io/not-ready";

/// A node's taints (`spec.taints`).
pub fn of_node(node: &DynamicObject) -> Vec<&Value> {
    node.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten().collect()
}

/// The key of a taint.
pub fn key(taint: &Value) -> &str {
    taint.get("key").and_then(Value::as_str).unwrap_or("")
}

/// The effect of a taint (`NoSchedule`, `PreferNoSchedule`, `NoExecute`).
pub fn effect(taint: &Value) -> &str {
    taint.get("effect").and_then(Value::as_str).unwrap_or("")
}

/// The toleration of `pod` that tolerates `taint`, if one does (kube's `ToleratesTaint`).
pub fn toleration_for<'a>(pod: &'a DynamicObject, taint: &Value) -> Option<&'a Value> {
    let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or("").to_owned();
    pod.pointer("/spec/tolerations").and_then(Value::as_array).into_iter().flatten().find(|toleration| {
        let effect = text(toleration, "effect");
        if !effect.is_empty() && effect != self::effect(taint) {
            return false;
        }
        let key = text(toleration, "key");
        let operator = text(toleration, "operator");
        if !key.is_empty() && key != self::key(taint) {
            return false;
        }
        match operator.as_str() {
            "Exists" => true,
            "" | "Equal" => {
                !key.is_empty() && text(toleration, "value") == taint.get("value").and_then(Value::as_str).unwrap_or("")
            }
            _ => false,
        }
    })
}

/// The first taint with a scheduling effect (NoSchedule, NoExecute) that `pod` does not
/// tolerate, if any.
pub fn untolerated<'a>(pod: &DynamicObject, taints: &[&'a Value]) -> Option<&'a Value> {
    taints
        .iter()
        .copied()
        .filter(|t| matches!(effect(t), "NoSchedule" | "NoExecute"))
        .find(|t| toleration_for(pod, t).is_none())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn tolerations_match_as_kube_matches_them() {
        let taint = json!({"key": UNREACHABLE, "effect": "NoExecute"});
        let pod = |tolerations: Value| DynamicObject::new(json!({"spec": {"tolerations": tolerations}}));
        assert!(toleration_for(&pod(json!([{"operator": "Exists"}])), &taint).is_some());
        assert!(
            toleration_for(&pod(json!([{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute"}])), &taint)
                .is_some()
        );
        assert!(
            toleration_for(&pod(json!([{"key": UNREACHABLE, "operator": "Exists", "effect": "NoSchedule"}])), &taint)
                .is_none()
        );
        assert!(toleration_for(&pod(json!([{"key": "other", "operator": "Exists"}])), &taint).is_none());
        assert!(untolerated(&pod(json!([])), &[&taint]).is_some());
    }
}
