//! `x-kubernetes-validations`: the CEL rules of a schema node (KEP-2876), evaluated with
//! cel-rust's interpreter the way kube's `apiextensions-apiserver/pkg/apiserver/schema/cel`
//! evaluates them:
//!
//! * `self` is the node's value, typed by its schema (an `integer` is an int, a `number` a
//!   double even when it is whole, objects are maps, arrays lists); `oldSelf` is the value at the
//!   same place in the stored object on an update. A rule that names `oldSelf` (a transition
//!   rule) runs only when there is an old value, unless `optionalOldSelf` makes `oldSelf` an
//!   optional (`optional.none()` on create);
//! * a rule that is false gives a field error at the node's path (plus its `fieldPath`), with
//!   the schema type as the value (`spec: Invalid value: "object": <message>`), the message, the
//!   value of `messageExpression`, or `failed rule: <rule>`; `reason` picks Forbidden, Required
//!   or Duplicate instead of Invalid;
//! * a rule that fails to evaluate (a missing key, no such overload) gives `Invalid value:
//!   "<type>": <error> evaluating rule: <message or rule>`;
//! * rules are compiled when a CRD is written ([`compile_errors`]); a rule that does not parse
//!   refuses the CRD with a 422 on `...x-kubernetes-validations[i].rule`.
//!
//! The environment is CEL's standard library with the strings and math extensions (cel-go's
//! `ext.Strings`, `ext.Math`). Kubernetes' own libraries (`quantity`, `url`, `ip`, `cidr`,
//! `isSorted`, regex `find`) and timestamps are not there: a rule that calls them fails to
//! evaluate. kube also estimates each rule's cost and refuses a CRD whose rules could cost too
//! much; listwatch does not (rules come from CRD authors, and objects are bounded in size).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::objects::OptionalValue;
use cel::{Context, Env, Program, Value as Cel};
use listwatch_meta::validation::{FieldError, FieldErrorType};
use serde_json::Value;

use super::{AdditionalProperties, Schema, ValidationRule};
use crate::errors;
use crate::path::FieldPath;

/// The CEL environment every rule is compiled and run in.
fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = Env::stdlib();
        // The extensions register distinct names; a clash would be a bug in the crate.
        let _ = env.add_extension(cel::extensions::strings);
        let _ = env.add_extension(cel::extensions::math);
        Arc::new(env)
    })
    .clone()
}

/// Compiles `source`, or says why it does not compile.
fn compile(source: &str) -> Result<Program, String> {
    env().compile(source).map_err(|e| e.to_string())
}

/// The compiled program of a rule that compiled when its CRD was written, kept so that a
/// rule on list items is not parsed again for every item of every write. Rules come from CRDs,
/// so the set is small; it is emptied should it ever pass [`PROGRAMS_KEPT`].
fn program(source: &str) -> Result<Arc<Program>, String> {
    static PROGRAMS: OnceLock<Mutex<HashMap<String, Arc<Program>>>> = OnceLock::new();
    let programs = PROGRAMS.get_or_init(Default::default);
    if let Some(program) = programs.lock().expect("the CEL program cache").get(source) {
        return Ok(program.clone());
    }
    let program = Arc::new(compile(source)?);
    let mut kept = programs.lock().expect("the CEL program cache");
    if kept.len() >= PROGRAMS_KEPT {
        kept.clear();
    }
    kept.insert(source.to_owned(), program.clone());
    Ok(program)
}

/// The most compiled rules kept at once.
const PROGRAMS_KEPT: usize = 4096;

/// The compilation errors of every rule under `schema` (at `path`, the schema's own path in the
/// CRD): kube's `compilation failed: ...` on `x-kubernetes-validations[i].rule`.
pub fn compile_errors(schema: &Schema, path: &FieldPath, errs: &mut Vec<FieldError>) {
    for (i, rule) in schema.validations.iter().enumerate() {
        let at = path.child("x-kubernetes-validations").index(i);
        if rule.rule.trim().is_empty() {
            errs.push(errors::required(&at.child("rule"), "rule is not specified"));
            continue;
        }
        if let Err(e) = compile(&rule.rule) {
            errs.push(errors::invalid_raw(&at.child("rule"), &go_rule(rule), &format!("compilation failed: {e}")));
        }
        if !rule.message_expression.trim().is_empty()
            && let Err(e) = compile(&rule.message_expression)
        {
            errs.push(errors::invalid_raw(
                &at.child("messageExpression"),
                &go_rule(rule),
                &format!("messageExpression compilation failed: {e}"),
            ));
        }
        if let Some(reason) = rule.reason.as_deref()
            && !REASONS.contains(&reason)
        {
            errs.push(FieldError::not_supported(
                at.child("reason").to_string(),
                &listwatch_meta::validation::go_quote(reason),
                &REASONS,
            ));
        }
    }
    for (name, property) in &schema.properties {
        compile_errors(property, &path.child("properties").key(name), errs);
    }
    if let Some(AdditionalProperties::Schema(additional)) = &schema.additional_properties {
        compile_errors(additional, &path.child("additionalProperties"), errs);
    }
    if let Some(items) = &schema.items {
        compile_errors(items, &path.child("items"), errs);
    }
}

/// The reasons a rule may give.
const REASONS: [&str; 4] = ["FieldValueInvalid", "FieldValueForbidden", "FieldValueRequired", "FieldValueDuplicate"];

/// How Go's `%v` prints the rule kube shows as the invalid value.
fn go_rule(rule: &ValidationRule) -> String {
    format!(
        "apiextensions.ValidationRule{{Rule:{:?}, Message:{:?}, MessageExpression:{:?}, FieldPath:{:?}}}",
        rule.rule, rule.message, rule.message_expression, rule.field_path
    )
}

/// Whether any node under `schema` has rules (objects of CRDs without any skip the walk).
pub fn has_rules(schema: &Schema) -> bool {
    !schema.validations.is_empty()
        || schema.properties.values().any(has_rules)
        || matches!(&schema.additional_properties, Some(AdditionalProperties::Schema(s)) if has_rules(s))
        || schema.items.as_deref().is_some_and(has_rules)
}

/// Runs every rule under `schema` on `value` (with `old`, the stored value at the same place,
/// on an update), adding a field error for each rule that does not hold.
pub fn validate(schema: &Schema, path: &FieldPath, value: &Value, old: Option<&Value>, errs: &mut Vec<FieldError>) {
    if value.is_null() {
        return;
    }
    if !schema.validations.is_empty() {
        let this = to_cel(schema, value);
        let previous = old.filter(|o| !o.is_null()).map(|o| to_cel(schema, o));
        for rule in &schema.validations {
            if let Some(error) = run_rule(schema, rule, path, &this, previous.as_ref()) {
                errs.push(error);
            }
        }
    }
    match value {
        Value::Object(map) => {
            let old_map = old.and_then(Value::as_object);
            for (key, child) in map {
                let child_schema = match (schema.properties.get(key), &schema.additional_properties) {
                    (Some(s), _) => s,
                    (None, Some(AdditionalProperties::Schema(s))) => s,
                    _ => continue,
                };
                let child_path = if schema.properties.contains_key(key) { path.child(key) } else { path.key(key) };
                validate(child_schema, &child_path, child, old_map.and_then(|m| m.get(key)), errs);
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = schema.items.as_deref() else { return };
            let old_items = old.and_then(Value::as_array);
            for (i, item) in items.iter().enumerate() {
                // As kube: items of a map-list are matched to the old list by their keys; other
                // lists' items have no old value.
                let old_item = old_items.and_then(|olds| correlated(schema, item, olds));
                validate(item_schema, &path.index(i), item, old_item, errs);
            }
        }
        _ => {}
    }
}

/// The item of `olds` with the same map keys as `item`, for a `x-kubernetes-list-type: map`.
fn correlated<'a>(schema: &Schema, item: &Value, olds: &'a [Value]) -> Option<&'a Value> {
    if schema.list_type.as_deref() != Some("map") || schema.list_map_keys.is_empty() {
        return None;
    }
    let keys = |v: &Value| -> Vec<Value> { schema.list_map_keys.iter().map(|k| v[k.as_str()].clone()).collect() };
    let wanted = keys(item);
    olds.iter().find(|old| keys(old) == wanted)
}

/// One rule on one value: `None` when it holds (or does not apply).
fn run_rule(
    schema: &Schema,
    rule: &ValidationRule,
    path: &FieldPath,
    this: &Cel,
    previous: Option<&Cel>,
) -> Option<FieldError> {
    let type_name = schema_type(schema);
    let program = match program(&rule.rule) {
        Ok(p) => p,
        // Refused when the CRD was written; a CRD stored before then is reported, not trusted.
        Err(e) => return Some(errors::invalid_raw(path, &quote(type_name), &format!("compilation failed: {e}"))),
    };
    let transition = program.references().has_variable("oldSelf");
    let optional_old = rule.optional_old_self == Some(true);
    if transition && previous.is_none() && !optional_old {
        return None;
    }
    let mut context = Context::with_env(env());
    context.add_variable_from_value("self", this.clone());
    if transition {
        let old = match (previous, optional_old) {
            (Some(p), true) => Cel::Opaque(Arc::new(OptionalValue::of(p.clone()))),
            (None, _) => Cel::Opaque(Arc::new(OptionalValue::none())),
            (Some(p), false) => p.clone(),
        };
        context.add_variable_from_value("oldSelf", old);
    }
    let at =
        if rule.field_path.is_empty() { path.clone() } else { path.child(rule.field_path.trim_start_matches('.')) };
    // kube's rules on the root run with a nil path, which prints as `<nil>`.
    let at = if at.as_str().is_empty() { FieldPath::new("<nil>") } else { at };
    match program.execute(&context) {
        Ok(Cel::Bool(true)) => None,
        Ok(Cel::Bool(false)) => {
            let detail = message(rule, &context).unwrap_or_else(|| default_message(rule));
            Some(for_reason(rule.reason.as_deref(), &at, type_name, &detail))
        }
        Ok(other) => Some(errors::invalid_raw(
            &at,
            &quote(type_name),
            &format!("rule did not evaluate to a bool (got {}) evaluating rule: {}", other.type_of(), rule_text(rule)),
        )),
        Err(e) => {
            Some(errors::invalid_raw(&at, &quote(type_name), &format!("{e} evaluating rule: {}", rule_text(rule))))
        }
    }
}

/// The value of `messageExpression`, when it has one that evaluates to a non-blank string.
fn message(rule: &ValidationRule, context: &Context) -> Option<String> {
    if rule.message_expression.trim().is_empty() {
        return None;
    }
    match program(&rule.message_expression).ok()?.execute(context) {
        Ok(Cel::String(text)) if !text.trim().is_empty() => Some(text.to_string()),
        _ => None,
    }
}

/// kube's `ruleMessageOrDefault`.
fn default_message(rule: &ValidationRule) -> String {
    if rule.message.trim().is_empty() {
        format!("failed rule: {}", rule_text(rule))
    } else {
        rule.message.trim().to_string()
    }
}

/// kube's `ruleErrorString`: the message if there is one, else the rule.
fn rule_text(rule: &ValidationRule) -> &str {
    if rule.message.trim().is_empty() { rule.rule.trim() } else { rule.message.trim() }
}

/// kube's `fieldErrorForReason`.
fn for_reason(reason: Option<&str>, path: &FieldPath, type_name: &str, detail: &str) -> FieldError {
    match reason {
        Some("FieldValueForbidden") => errors::forbidden(path, detail),
        Some("FieldValueRequired") => errors::required(path, detail),
        Some("FieldValueDuplicate") => errors::duplicate(path, &Value::String(type_name.into())),
        _ => errors::invalid_raw(path, &quote(type_name), detail),
    }
}

fn quote(text: &str) -> String {
    listwatch_meta::validation::go_quote(text)
}

/// The type kube shows as the value of a failed rule.
fn schema_type(schema: &Schema) -> &str {
    if schema.int_or_string {
        "integer"
    } else if schema.type_.is_empty() {
        "object"
    } else {
        &schema.type_
    }
}

/// Whether a field error keeps kube from running the rules at all (its `hasBlockingErr`): the
/// object is too broken for rules written against its schema.
pub fn is_blocking(error: &FieldError) -> bool {
    matches!(
        error.error_type,
        FieldErrorType::Required
            | FieldErrorType::NotSupported
            | FieldErrorType::TooLong
            | FieldErrorType::TooMany
            | FieldErrorType::TypeInvalid
    )
}

/// The error kube adds in place of the rules' when a blocking error stopped them.
pub fn not_checked() -> FieldError {
    errors::invalid_raw(
        &FieldPath::new("<nil>"),
        "null",
        "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
    )
}

/// Whether `condition` holds for `object` (as `self`, typed as JSON types it: whole numbers
/// are ints), in the environment of the schema rules: the simulator's check of a controller's
/// work. `Err` says why it cannot be compiled or evaluated, or what it evaluated to instead of
/// a bool.
pub fn holds(condition: &str, object: &Value) -> Result<bool, String> {
    let program = program(condition)?;
    let mut context = Context::with_env(env());
    context.add_variable_from_value("self", to_cel(&Schema::default(), object));
    match program.execute(&context) {
        Ok(Cel::Bool(holds)) => Ok(holds),
        Ok(other) => Err(format!("{condition} evaluated to a {}, not a bool", other.type_of())),
        Err(e) => Err(format!("{e} evaluating {condition}")),
    }
}

/// Whether `condition` compiles.
pub fn compiles(condition: &str) -> Result<(), String> {
    program(condition).map(|_| ())
}

/// The variables an admission expression sees (kube's `object`, `oldObject`, `request`,
/// `params`, `namespaceObject`, and the policy's own `variables`), typed as JSON types them, in
/// the environment of the schema rules. ValidatingAdmissionPolicy and webhook match conditions
/// evaluate their expressions against one activation per request (and per param).
pub struct Activation {
    context: Context<'static, 'static>,
    variables: HashMap<String, Cel>,
}

impl Activation {
    /// An activation binding each name to its JSON value (`null` for an absent object).
    pub fn new(bindings: &[(&str, &Value)]) -> Activation {
        let mut context = Context::with_env(env());
        for (name, value) in bindings {
            context.add_variable_from_value(*name, to_cel(&Schema::default(), value));
        }
        context.add_variable_from_value("variables", Cel::from(HashMap::<String, Cel>::new()));
        Activation { context, variables: HashMap::new() }
    }

    /// Evaluates `expression` and binds its value as `variables.<name>`. One that fails stays
    /// unbound, so that only the expressions that use it fail (kube evaluates variables lazily,
    /// when an expression first names them); its error is returned for the record.
    pub fn define(&mut self, name: &str, expression: &str) -> Result<(), String> {
        let value = self.evaluate(expression)?;
        self.variables.insert(name.to_owned(), value);
        self.context.add_variable_from_value("variables", Cel::from(self.variables.clone()));
        Ok(())
    }

    /// Whether `expression` evaluates to `true` (anything else is `false`, as kube's validator
    /// reads a result); `Err` is kube's `expression '...' resulted in error: ...`.
    pub fn holds(&self, expression: &str) -> Result<bool, String> {
        Ok(matches!(self.evaluate(expression)?, Cel::Bool(true)))
    }

    /// A condition that must be a bool (match conditions): `Err` when it is not.
    pub fn condition(&self, expression: &str) -> Result<bool, String> {
        match self.evaluate(expression)? {
            Cel::Bool(holds) => Ok(holds),
            other => Err(format!("expression '{expression}' resulted in a {}, not a bool", other.type_of())),
        }
    }

    /// The string `expression` evaluates to (a message expression); `None` for any other type.
    pub fn string(&self, expression: &str) -> Result<Option<String>, String> {
        match self.evaluate(expression)? {
            Cel::String(text) => Ok(Some(text.to_string())),
            _ => Ok(None),
        }
    }

    fn evaluate(&self, expression: &str) -> Result<Cel, String> {
        let failed = |e: String| format!("expression '{expression}' resulted in error: {e}");
        let program = program(expression).map_err(failed)?;
        program.execute(&self.context).map_err(|e| failed(e.to_string()))
    }
}

/// `value` as CEL sees it under `schema`.
fn to_cel(schema: &Schema, value: &Value) -> Cel {
    match value {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match (schema.type_.as_str(), n.as_i64(), n.as_u64()) {
            ("number", _, _) => Cel::Float(n.as_f64().unwrap_or(0.0)),
            (_, Some(i), _) => Cel::Int(i),
            (_, None, Some(u)) => Cel::UInt(u),
            _ => Cel::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => Cel::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let unknown = Schema::default();
            let item_schema = schema.items.as_deref().unwrap_or(&unknown);
            Cel::List(Arc::new(items.iter().map(|i| to_cel(item_schema, i)).collect()))
        }
        Value::Object(map) => {
            let unknown = Schema::default();
            let entries: HashMap<String, Cel> = map
                .iter()
                .map(|(k, v)| {
                    let child = match (schema.properties.get(k), &schema.additional_properties) {
                        (Some(s), _) => s,
                        (None, Some(AdditionalProperties::Schema(s))) => s,
                        _ => &unknown,
                    };
                    (k.clone(), to_cel(child, v))
                })
                .collect();
            Cel::from(entries)
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn schema(raw: Value) -> Schema {
        Schema::parse(&raw).expect("the schema parses")
    }

    fn run(s: &Schema, value: Value, old: Option<Value>) -> Vec<String> {
        let mut errs = Vec::new();
        validate(s, &FieldPath::root(), &value, old.as_ref(), &mut errs);
        errs.into_iter().map(|e| format!("{}: {} ({})", e.field, e.message, e.error_type.as_str())).collect()
    }

    fn replicas() -> Schema {
        schema(json!({"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas", "message": "replicas should be at least minReplicas"},
                {"rule": "self.replicas < 100"},
                {"rule": "self.replicas >= oldSelf.replicas", "reason": "FieldValueForbidden", "message": "no scaling down"},
            ],
            "properties": {"replicas": {"type": "integer"}, "minReplicas": {"type": "integer"}}
        }}}))
    }

    #[test]
    fn a_rule_that_holds_gives_nothing_and_one_that_fails_names_the_node_and_its_type() {
        let s = replicas();
        assert!(run(&s, json!({"spec": {"replicas": 3, "minReplicas": 1}}), None).is_empty());
        assert_eq!(
            run(&s, json!({"spec": {"replicas": 300, "minReplicas": 400}}), None),
            vec![
                "spec: Invalid value: \"object\": replicas should be at least minReplicas (FieldValueInvalid)",
                "spec: Invalid value: \"object\": failed rule: self.replicas < 100 (FieldValueInvalid)",
            ]
        );
    }

    #[test]
    fn transition_rules_run_only_on_updates_and_take_their_reason() {
        let s = replicas();
        assert!(run(&s, json!({"spec": {"replicas": 3, "minReplicas": 1}}), None).is_empty(), "no oldSelf on create");
        assert_eq!(
            run(&s, json!({"spec": {"replicas": 2, "minReplicas": 1}}), Some(json!({"spec": {"replicas": 5}}))),
            vec!["spec: Forbidden: no scaling down (FieldValueForbidden)"]
        );
    }

    #[test]
    fn a_rule_that_cannot_be_evaluated_says_why() {
        let s = replicas();
        let errs = run(&s, json!({"spec": {"replicas": 3}}), None);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0].starts_with("spec: Invalid value: \"object\": ")
                && errs[0].contains("minReplicas")
                && errs[0].contains("evaluating rule: replicas should be at least minReplicas"),
            "{errs:?}"
        );
    }

    #[test]
    fn rules_see_typed_values_lists_maps_and_string_functions() {
        let s = schema(json!({"type": "object", "properties": {
            "ratio": {"type": "number", "x-kubernetes-validations": [{"rule": "self == 2.0"}]},
            "tags": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self.lowerAscii() == self", "fieldPath": ""}]},
                     "x-kubernetes-validations": [{"rule": "self.all(t, size(t) <= 5)", "messageExpression": "'tags are too long: ' + self.join(',')"}]},
            "labels": {"type": "object", "additionalProperties": {"type": "string"},
                       "x-kubernetes-validations": [{"rule": "has(self.app) && self.app.startsWith('web')"}]}
        }}));
        assert!(run(&s, json!({"ratio": 2, "tags": ["a", "b"], "labels": {"app": "web-1"}}), None).is_empty());
        let mut errs = run(&s, json!({"ratio": 2, "tags": ["Abc", "toolong"], "labels": {"team": "x"}}), None);
        errs.sort();
        assert_eq!(
            errs,
            vec![
                "labels: Invalid value: \"object\": failed rule: has(self.app) && self.app.startsWith('web') (FieldValueInvalid)",
                "tags: Invalid value: \"array\": tags are too long: Abc,toolong (FieldValueInvalid)",
                "tags[0]: Invalid value: \"string\": failed rule: self.lowerAscii() == self (FieldValueInvalid)",
            ]
        );
    }

    #[test]
    fn map_list_items_are_matched_to_their_old_selves_by_key() {
        let s = schema(json!({"type": "object", "properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer"}},
                      "x-kubernetes-validations": [{"rule": "self.port == oldSelf.port", "message": "port is immutable"}]}
        }}}));
        let old = json!({"ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]});
        let new = json!({"ports": [{"name": "https", "port": 8443}, {"name": "http", "port": 80}, {"name": "new", "port": 1}]});
        assert_eq!(
            run(&s, new, Some(old)),
            vec!["ports[0]: Invalid value: \"object\": port is immutable (FieldValueInvalid)"]
        );
    }

    #[test]
    fn admission_expressions_see_their_variables_and_say_why_they_fail() {
        let object = serde_json::json!({"spec": {"replicas": 3}, "metadata": {"name": "web"}});
        let request = serde_json::json!({"operation": "CREATE"});
        let mut activation =
            Activation::new(&[("object", &object), ("request", &request), ("oldObject", &Value::Null)]);
        assert_eq!(activation.holds("object.spec.replicas <= 5"), Ok(true));
        assert_eq!(activation.holds("object.spec.replicas > 5"), Ok(false));
        assert_eq!(activation.holds("oldObject == null && request.operation == 'CREATE'"), Ok(true));
        activation.define("limit", "2").unwrap();
        assert_eq!(activation.holds("object.spec.replicas <= variables.limit"), Ok(false));
        assert!(activation.define("broken", "object.spec.missing").is_err());
        let error = activation.holds("variables.broken == 1").unwrap_err();
        assert!(error.starts_with("expression 'variables.broken == 1' resulted in error: "), "{error}");
        assert_eq!(activation.string("'too many: ' + string(object.spec.replicas)"), Ok(Some("too many: 3".into())));
        assert_eq!(activation.string("1"), Ok(None));
        assert!(activation.condition("1").is_err());
    }

    #[test]
    fn rules_that_do_not_parse_are_refused_with_the_crd() {
        let s = schema(json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.replicas >"}, {"rule": ""}, {"rule": "true", "reason": "Nope"}]}}}));
        let mut errs = Vec::new();
        compile_errors(&s, &FieldPath::new("spec.versions[0].schema.openAPIV3Schema"), &mut errs);
        let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            vec![
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].rule",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].reason",
            ]
        );
        assert!(errs[0].message.contains("compilation failed: "), "{}", errs[0].message);
        assert_eq!(errs[1].error_type, FieldErrorType::Required);
        assert!(has_rules(&s));
    }
}
