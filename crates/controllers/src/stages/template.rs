//! `next.statusTemplate`: the status a stage writes, as YAML with substitutions.
//!
//! kwok's templates are Go `text/template`s that print YAML; listwatch has no Go template
//! engine, and a text template can print YAML that does not parse, which kwok finds out only
//! when a pod reaches the stage. Here a template is the status itself, written as YAML, parsed
//! when the file is loaded (so a mistake is refused at start, with its line), with three
//! additions:
//!
//! * `{{ EXPR }}` inside a string is replaced by the expression's value. A string that is only
//!   `{{ EXPR }}` takes the value's type (`restartCount: "{{ $status.restartCount | add1 }}"`
//!   is a number; quote it, as YAML reads a bare `{{` as a mapping); a value that is missing
//!   leaves the field out. Inside longer text a missing value prints nothing.
//! * A mapping `{$range: PATH, each: ITEM}` is a list: ITEM once for each element PATH
//!   reaches, with `.` the element (`containerStatuses: {$range: .spec.containers, each:
//!   {name: "{{ .name }}", ...}}`); left out if PATH reaches nothing.
//! * Expressions: `Now` (RFC 3339), `PodIP` (the pod's IP, given out once), `QOSClass`; a path
//!   ([`super::path`]) from `.` (the object, or the `$range` element), `$root` (the object)
//!   or `$status` (inside a `$range` over `containers` or `initContainers`: the element's entry
//!   of the same name in `status.containerStatuses` or `status.initContainerStatuses` now); a
//!   JSON literal. Then `| add1`, `| default LITERAL`, `| join "SEP"` (a path reaching several
//!   values gives a list).
//!
//! The rendered status is sent as a strategic merge patch of the status subresource, as kwok
//! does: `conditions` merge by `type`, other lists are replaced.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::path::JsonPath;

/// A parsed status template.
#[derive(Clone, Debug)]
pub struct StatusTemplate {
    root: Node,
    uses_pod_ip: bool,
}

/// What a template is rendered with.
pub struct Context<'a> {
    /// The object the stage applies to.
    pub object: &'a Value,
    /// The time now, RFC 3339.
    pub now: &'a str,
    /// The pod's IP, if the template asks for it ([`StatusTemplate::uses_pod_ip`]).
    pub pod_ip: Option<&'a str>,
    /// The pod's QoS class.
    pub qos_class: &'a str,
}

#[derive(Clone, Debug)]
enum Node {
    Literal(Value),
    Text(Vec<Piece>),
    Whole(Expr),
    Map(Vec<(String, Node)>),
    List(Vec<Node>),
    Range { over: Expr, statuses: Option<String>, each: Box<Node> },
}

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Expr(Expr),
}

#[derive(Clone, Debug)]
struct Expr {
    term: Term,
    functions: Vec<Function>,
}

#[derive(Clone, Debug)]
enum Term {
    Now,
    PodIp,
    QosClass,
    Literal(Value),
    Path(Base, JsonPath),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Base {
    Dot,
    Root,
    Status,
}

#[derive(Clone, Debug)]
enum Function {
    Add1,
    Default(Value),
    Join(String),
}

/// Where `.` and `$status` point while rendering.
#[derive(Clone, Copy)]
struct Scope<'a> {
    dot: &'a Value,
    status: Option<&'a Value>,
}

impl StatusTemplate {
    /// Parses a template (YAML text); the error names what is wrong and where in the text.
    pub fn parse(text: &str) -> Result<StatusTemplate, String> {
        let value: Value = serde_yaml_ng::from_str(text).map_err(|e| format!("the template is not YAML: {e}"))?;
        if !value.is_object() {
            return Err("the template must be a mapping (the status's fields)".into());
        }
        let root = compile(&value, "")?;
        Ok(StatusTemplate { uses_pod_ip: text.contains("PodIP"), root })
    }

    /// Whether rendering needs the pod's IP.
    pub fn uses_pod_ip(&self) -> bool {
        self.uses_pod_ip
    }

    /// The status for `cx.object`.
    pub fn render(&self, cx: &Context<'_>) -> Value {
        render(&self.root, Scope { dot: cx.object, status: None }, cx).unwrap_or_else(|| Value::Object(Map::new()))
    }
}

impl<'de> Deserialize<'de> for StatusTemplate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Parsed inside the visitor, so serde_yaml places an error at the template, not at the
        // mapping around it.
        super::de::parse_str(deserializer, "a status template (YAML text)", StatusTemplate::parse)
    }
}

fn compile(value: &Value, at: &str) -> Result<Node, String> {
    Ok(match value {
        Value::String(s) => compile_string(s).map_err(|e| format!("{}: {e}", if at.is_empty() { "." } else { at }))?,
        Value::Array(items) => Node::List(
            items.iter().enumerate().map(|(i, v)| compile(v, &format!("{at}[{i}]"))).collect::<Result<_, _>>()?,
        ),
        Value::Object(map) if map.contains_key("$range") => {
            let over = map["$range"].as_str().ok_or_else(|| format!("{at}.$range: expected a path"))?;
            let each = map.get("each").ok_or_else(|| format!("{at}: `$range` needs `each`, the item to repeat"))?;
            if let Some(extra) = map.keys().find(|k| !matches!(k.as_str(), "$range" | "each")) {
                return Err(format!("{at}: unknown field `{extra}` beside `$range`, expected only `each`"));
            }
            let over = parse_expr(over).map_err(|e| format!("{at}.$range: {e}"))?;
            let statuses = match &over.term {
                Term::Path(_, path) => path.as_str().rsplit('.').next().filter(|name| name.ends_with("ontainers")),
                _ => None,
            }
            .map(|name| format!("{}Statuses", name.trim_end_matches('s')));
            Node::Range { over, statuses, each: Box::new(compile(each, &format!("{at}.each"))?) }
        }
        Value::Object(map) => Node::Map(
            map.iter()
                .map(|(k, v)| Ok((k.clone(), compile(v, &format!("{at}.{k}"))?)))
                .collect::<Result<_, String>>()?,
        ),
        other => Node::Literal(other.clone()),
    })
}

fn compile_string(text: &str) -> Result<Node, String> {
    if !text.contains("{{") {
        return Ok(Node::Literal(Value::String(text.to_string())));
    }
    let trimmed = text.trim();
    if trimmed.starts_with("{{") && trimmed.ends_with("}}") && trimmed.matches("{{").count() == 1 {
        return Ok(Node::Whole(parse_expr(&trimmed[2..trimmed.len() - 2])?));
    }
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let end = rest[start..].find("}}").ok_or_else(|| format!("`{{{{` without `}}}}` in {text:?}"))? + start;
        if start > 0 {
            pieces.push(Piece::Text(rest[..start].to_string()));
        }
        pieces.push(Piece::Expr(parse_expr(&rest[start + 2..end])?));
        rest = &rest[end + 2..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(Node::Text(pieces))
}

const EXPECTED_TERM: &str = "expected Now, PodIP, QOSClass, a path from `.`, `$root` or `$status`, or a JSON literal";

fn parse_expr(text: &str) -> Result<Expr, String> {
    // `|` both chains the template's functions and the path's own jq pipes: a part that starts
    // with a function's name is a function, any other continues the path.
    let mut parts = text.split('|');
    let mut term_text = parts.next().unwrap_or("").trim().to_string();
    let mut function_texts: Vec<&str> = Vec::new();
    for part in parts {
        let name = part.split_whitespace().next().unwrap_or("");
        if function_texts.is_empty() && !matches!(name, "add1" | "default" | "join") {
            term_text.push('|');
            term_text.push_str(part);
        } else {
            function_texts.push(part.trim());
        }
    }
    let term_text = term_text.trim();
    let term = match term_text {
        "Now" => Term::Now,
        "PodIP" => Term::PodIp,
        "QOSClass" => Term::QosClass,
        _ => {
            let (base, path) = if let Some(path) = term_text.strip_prefix("$root") {
                (Base::Root, path)
            } else if let Some(path) = term_text.strip_prefix("$status") {
                (Base::Status, path)
            } else {
                (Base::Dot, term_text)
            };
            let path = if path.is_empty() { "." } else { path };
            if base != Base::Dot || path.starts_with(['.', '[']) {
                Term::Path(base, JsonPath::parse(path).map_err(|e| format!("{{{{ {} }}}}: {e}", text.trim()))?)
            } else {
                Term::Literal(
                    serde_json::from_str(term_text)
                        .map_err(|_| format!("{{{{ {} }}}}: unknown {term_text:?}, {EXPECTED_TERM}", text.trim()))?,
                )
            }
        }
    };
    let functions = function_texts
        .into_iter()
        .map(|f| {
            let (name, argument) = f.split_once(char::is_whitespace).unwrap_or((f, ""));
            let literal = || {
                serde_json::from_str::<Value>(argument.trim())
                    .map_err(|_| format!("{{{{ {} }}}}: `{name}` takes a JSON literal, got {argument:?}", text.trim()))
            };
            match name {
                "add1" => Ok(Function::Add1),
                "default" => Ok(Function::Default(literal()?)),
                "join" => match literal()? {
                    Value::String(separator) => Ok(Function::Join(separator)),
                    _ => Err(format!("{{{{ {} }}}}: `join` takes a quoted separator", text.trim())),
                },
                _ => {
                    Err(format!("{{{{ {} }}}}: unknown function {name:?}, expected add1, default or join", text.trim()))
                }
            }
        })
        .collect::<Result<_, String>>()?;
    Ok(Expr { term, functions })
}

fn evaluate(expr: &Expr, scope: Scope<'_>, cx: &Context<'_>) -> Option<Value> {
    let mut value = match &expr.term {
        Term::Now => Some(Value::String(cx.now.to_string())),
        Term::PodIp => cx.pod_ip.map(|ip| Value::String(ip.to_string())),
        Term::QosClass => Some(Value::String(cx.qos_class.to_string())),
        Term::Literal(v) => Some(v.clone()),
        Term::Path(base, path) => {
            let from = match base {
                Base::Dot => Some(scope.dot),
                Base::Root => Some(cx.object),
                Base::Status => scope.status,
            };
            let mut values: Vec<Value> =
                from.map(|v| path.values(v)).unwrap_or_default().into_iter().cloned().collect();
            match values.len() {
                0 => None,
                1 => values.pop(),
                _ => Some(Value::Array(values)),
            }
        }
    };
    for function in &expr.functions {
        value = match function {
            Function::Add1 => Some(Value::from(value.as_ref().and_then(Value::as_i64).unwrap_or(0) + 1)),
            Function::Default(fallback) => value.or_else(|| Some(fallback.clone())),
            Function::Join(separator) => value.map(|v| match v {
                Value::Array(items) => Value::String(items.iter().map(text_of).collect::<Vec<_>>().join(separator)),
                other => Value::String(text_of(&other)),
            }),
        };
    }
    value
}

/// A value as it reads inside text: strings bare, anything else as JSON.
fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn render(node: &Node, scope: Scope<'_>, cx: &Context<'_>) -> Option<Value> {
    match node {
        Node::Literal(v) => Some(v.clone()),
        Node::Whole(expr) => evaluate(expr, scope, cx),
        Node::Text(pieces) => Some(Value::String(
            pieces
                .iter()
                .map(|piece| match piece {
                    Piece::Text(text) => text.clone(),
                    Piece::Expr(expr) => evaluate(expr, scope, cx).map(|v| text_of(&v)).unwrap_or_default(),
                })
                .collect(),
        )),
        Node::Map(fields) => {
            Some(Value::Object(fields.iter().filter_map(|(k, n)| Some((k.clone(), render(n, scope, cx)?))).collect()))
        }
        Node::List(items) => Some(Value::Array(items.iter().filter_map(|n| render(n, scope, cx)).collect())),
        Node::Range { over, statuses, each } => {
            let items = match evaluate(over, scope, cx)? {
                Value::Array(items) => items,
                single => vec![single],
            };
            let current = statuses.as_ref().and_then(|field| cx.object.get("status")?.get(field)?.as_array());
            Some(Value::Array(
                items
                    .iter()
                    .filter_map(|item| {
                        let status = current.and_then(|list| {
                            list.iter().find(|s| s.get("name").is_some() && s.get("name") == item.get("name"))
                        });
                        render(each, Scope { dot: item, status }, cx)
                    })
                    .collect(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn render_with(template: &str, object: &Value) -> Value {
        let template = StatusTemplate::parse(template).unwrap();
        template.render(&Context { object, now: "NOW", pod_ip: Some("10.244.0.2"), qos_class: "BestEffort" })
    }

    #[test]
    fn substitutions_ranges_and_the_current_container_status() {
        let pod = json!({
            "metadata": {"uid": "u1"},
            "spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]},
            "status": {"containerStatuses": [{"name": "b", "restartCount": 2, "state": {"terminated": {"exitCode": 1}}}]},
        });
        let status = render_with(
            r#"
phase: Running
podIP: "{{ PodIP }}"
qosClass: "{{ QOSClass }}"
message: 'unready: [{{ .spec.containers[].name | join " " }}]'
containerStatuses:
  $range: .spec.containers
  each:
    name: "{{ .name }}"
    containerID: "listwatch://{{ $root.metadata.uid }}/{{ .name }}"
    restartCount: "{{ $status.restartCount | add1 }}"
    lastState: {terminated: "{{ $status.state.terminated }}"}
    startedAt: "{{ Now }}"
    missing: "{{ .nothing }}"
    fallback: "{{ .nothing | default 7 }}"
initContainerStatuses:
  $range: .spec.initContainers
  each: {name: "{{ .name }}"}
"#,
            &pod,
        );
        assert_eq!(status["phase"], "Running");
        assert_eq!(status["podIP"], "10.244.0.2");
        assert_eq!(status["qosClass"], "BestEffort");
        assert_eq!(status["message"], "unready: [a b]");
        let containers = status["containerStatuses"].as_array().unwrap();
        assert_eq!(containers.len(), 2);
        assert_eq!(containers[0]["containerID"], "listwatch://u1/a");
        assert_eq!(containers[0]["restartCount"], 1, "no status yet: 0 + 1");
        assert_eq!(containers[1]["restartCount"], 3);
        assert_eq!(containers[1]["lastState"], json!({"terminated": {"exitCode": 1}}));
        assert_eq!(containers[0]["lastState"], json!({}));
        assert_eq!(containers[0]["startedAt"], "NOW");
        assert!(containers[0].get("missing").is_none());
        assert_eq!(containers[0]["fallback"], 7);
        assert!(status.get("initContainerStatuses").is_none(), "a range over nothing is left out");
    }

    #[test]
    fn mistakes_are_refused_with_where_they_are() {
        let error = |text: &str| StatusTemplate::parse(text).unwrap_err();
        assert!(error("phase: \"{{ Later }}\"").contains("unknown \"Later\""), "{}", error("phase: \"{{ Later }}\""));
        assert!(error("a: {b: \"{{ .x | add2 }}\"}").starts_with(".a.b: "), "{}", error("a: {b: \"{{ .x | add2 }}\"}"));
        assert!(error("- a").contains("must be a mapping"));
        assert!(error("l: {$range: .spec.containers}").contains("needs `each`"));
        assert!(error("phase: [").contains("not YAML"));
    }
}
