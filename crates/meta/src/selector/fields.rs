//! Field selectors (`k8s.io/apimachinery/pkg/fields`): their model, escaping, parser, and the
//! conversion of field labels per kind; apart from label selectors, as kube keeps them.

use super::*;

// ---------------------------------------------------------------------------
// Field selectors (k8s.io/apimachinery/pkg/fields)
// ---------------------------------------------------------------------------

/// A field selector operator. `==` parses to [`FieldOperator::Equals`], as
/// kube keeps no difference between `=` and `==` for fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldOperator {
    /// `field=value` or `field==value`
    Equals,
    /// `field!=value`
    NotEquals,
}

/// One ANDed term of a field selector, with its value unescaped.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldRequirement {
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// The comparison.
    pub operator: FieldOperator,
    /// The literal value to compare with.
    pub value: String,
}

impl FieldRequirement {
    /// Whether the field's value satisfies the term. A field the object does
    /// not have reads as the empty string, as kube's `Fields.Get` does.
    pub fn matches(&self, actual: Option<&str>) -> bool {
        let equal = actual.unwrap_or("") == self.value;
        match self.operator {
            FieldOperator::Equals => equal,
            FieldOperator::NotEquals => !equal,
        }
    }
}

impl fmt::Display for FieldRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let operator = match self.operator {
            FieldOperator::Equals => "=",
            FieldOperator::NotEquals => "!=",
        };
        write!(f, "{}{operator}{}", self.field, escape_field_value(&self.value))
    }
}

/// A parsed field selector: terms ANDed, in kube's order (sorted by their
/// raw text).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

/// kube's `fields.EscapeValue`: `\` to `\\`, then `,` to `\,` and `=` to `\=`.
pub fn escape_field_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        if matches!(c, '\\' | ',' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// kube's `fields.UnescapeValue`.
pub fn unescape_field_value(value: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(value.len());
    let mut escaped = false;
    for c in value.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                )));
            }
            out.push(c);
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            ',' | '=' => {
                // kube formats the rune with %v, i.e. as its code point number.
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid field selector: unescaped character in value: {}",
                    u32::from(c)
                )));
            }
            c => out.push(c),
        }
    }
    if escaped {
        return Err(SelectorError::InvalidFieldSelector(
            "invalid field selector: invalid escape sequence: \\".to_owned(),
        ));
    }
    Ok(out)
}

/// kube's `splitTerms`: split on commas that are not escaped.
pub(super) fn split_field_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in selector.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// kube's `splitTerm`: the field, operator and raw value at the first
/// operator; `==` is tried before `=` so it does not leave `=` in the value.
pub(super) fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    const OPERATORS: [(&str, FieldOperator); 3] =
        [("!=", FieldOperator::NotEquals), ("==", FieldOperator::Equals), ("=", FieldOperator::Equals)];
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (text, operator) in OPERATORS {
            if let Some(value) = rest.strip_prefix(text) {
                return Some((&term[..i], operator, value));
            }
        }
    }
    None
}

impl FieldSelector {
    /// The selector that matches everything.
    pub fn everything() -> FieldSelector {
        FieldSelector::default()
    }

    /// Parses a `fieldSelector` value (`fields.ParseSelector`).
    pub fn parse(selector: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = split_field_terms(selector);
        terms.sort_unstable();
        let mut requirements = Vec::with_capacity(terms.len());
        for term in terms.into_iter().filter(|term| !term.is_empty()) {
            let Some((field, operator, raw_value)) = split_field_term(term) else {
                return Err(SelectorError::InvalidFieldSelector(format!(
                    "invalid selector: '{selector}'; can't understand '{term}'"
                )));
            };
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                operator,
                value: unescape_field_value(raw_value)?,
            });
        }
        Ok(FieldSelector { requirements })
    }

    /// Whether the selector restricts nothing.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// The terms, in kube's order.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }

    /// The field names the selector uses, in term order.
    pub fn fields(&self) -> Vec<&str> {
        self.requirements.iter().map(|r| r.field.as_str()).collect()
    }

    /// Whether an object matches, with `get` mapping a field path to the
    /// object's value for it as kube's per-kind field sets do (`None` when
    /// the object has no such field, which compares as the empty string).
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| r.matches(get(&r.field).as_deref()))
    }

    /// Whether a JSON object matches, reading each field by its dotted path
    /// (`metadata.name` is `object["metadata"]["name"]`). Strings compare as
    /// is, booleans and numbers as their JSON text, anything else as absent.
    /// Fields kube derives rather than reads (a pod's `status.podIP` from
    /// `status.podIPs`, `spec.hostNetwork` defaulting to `false`) need
    /// [`FieldSelector::matches`] with a kind-aware lookup.
    pub fn matches_object(&self, object: &Value) -> bool {
        self.matches(|path| {
            let value = path.split('.').try_fold(object, |current, segment| current.get(segment))?;
            match value {
                Value::String(s) => Some(s.clone()),
                Value::Bool(b) => Some(b.to_string()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            }
        })
    }

    /// The value the selector requires for `field` (`RequiresExactMatch`):
    /// the first `=` / `==` term on that field.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// The object name the selector pins with `metadata.name=X`, which lets a
    /// watch be served from a per-name index.
    pub fn requires_exact_name(&self) -> Option<&str> {
        self.requires_exact_match("metadata.name")
    }

    /// The namespace the selector pins with `metadata.namespace=X`.
    pub fn requires_exact_namespace(&self) -> Option<&str> {
        self.requires_exact_match("metadata.namespace")
    }

    /// Checks every field against what the resource supports and applies
    /// kube's renames (`Selector.Transform` with the kind's field label
    /// conversion). The first unsupported field, in term order, is the error.
    pub fn convert_labels(&self, labels: &FieldLabels) -> Result<FieldSelector, SelectorError> {
        let mut requirements = Vec::with_capacity(self.requirements.len());
        for requirement in &self.requirements {
            let field = labels.convert(&requirement.field)?;
            requirements.push(FieldRequirement {
                field: field.to_owned(),
                operator: requirement.operator,
                value: requirement.value.clone(),
            });
        }
        Ok(FieldSelector { requirements })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

/// The field labels a resource can be selected by, and how kube words the
/// rejection of any other (its field label conversion function).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldLabels {
    /// `runtime.DefaultMetaV1FieldSelectorConversion`, used by every built-in
    /// kind that registers no conversion of its own: `metadata.name` and
    /// `metadata.namespace` (also for cluster-scoped kinds), rejecting others
    /// with `"<field>" is not a known field selector: only "metadata.name", "metadata.namespace"`.
    MetadataOnly,
    /// A kind's own conversion function, or a custom resource's: exactly the
    /// listed fields, `aliases` renamed to their canonical field, others
    /// rejected with `field label not supported: <field>`.
    Listed {
        /// The accepted field labels.
        supported: Vec<String>,
        /// Accepted legacy names and the field they stand for.
        aliases: Vec<(String, String)>,
    },
}

impl FieldLabels {
    fn listed(supported: &[&str], aliases: &[(&str, &str)]) -> FieldLabels {
        FieldLabels::Listed {
            supported: supported.iter().map(|s| (*s).to_owned()).collect(),
            aliases: aliases.iter().map(|(alias, field)| ((*alias).to_owned(), (*field).to_owned())).collect(),
        }
    }

    /// The field labels of a built-in kind, from
    /// `k8s.io/kubernetes/pkg/apis/core/v1/conversion.go` (core group, `""`).
    /// Kinds of other groups are answered with [`FieldLabels::MetadataOnly`];
    /// a few of them (e.g. `apps/v1` ReplicaSet, `batch/v1` Job) register
    /// their own conversions in kube that are not reproduced here.
    pub fn builtin(group: &str, kind: &str) -> FieldLabels {
        if !group.is_empty() {
            return FieldLabels::MetadataOnly;
        }
        match kind {
            "Pod" => FieldLabels::listed(
                &[
                    "metadata.name",
                    "metadata.namespace",
                    "spec.nodeName",
                    "spec.restartPolicy",
                    "spec.schedulerName",
                    "spec.serviceAccountName",
                    "spec.hostNetwork",
                    "status.phase",
                    "status.podIP",
                    "status.podIPs",
                    "status.nominatedNodeName",
                ],
                // Old v1 clients send spec.host.
                &[("spec.host", "spec.nodeName")],
            ),
            "Node" => FieldLabels::listed(&["metadata.name", "spec.unschedulable"], &[]),
            "ReplicationController" => {
                FieldLabels::listed(&["metadata.name", "metadata.namespace", "status.replicas"], &[])
            }
            "Event" => FieldLabels::listed(
                &[
                    "involvedObject.kind",
                    "involvedObject.namespace",
                    "involvedObject.name",
                    "involvedObject.uid",
                    "involvedObject.apiVersion",
                    "involvedObject.resourceVersion",
                    "involvedObject.fieldPath",
                    "reason",
                    "reportingComponent",
                    "source",
                    "type",
                    "metadata.namespace",
                    "metadata.name",
                ],
                &[],
            ),
            "Namespace" => FieldLabels::listed(&["status.phase", "metadata.name"], &[]),
            "Secret" => FieldLabels::listed(&["type", "metadata.namespace", "metadata.name"], &[]),
            "Service" => {
                FieldLabels::listed(&["metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"], &[])
            }
            _ => FieldLabels::MetadataOnly,
        }
    }

    /// The field labels of a custom resource (`crConverter.ConvertFieldLabel`):
    /// `metadata.name`, `metadata.namespace` when namespaced, and the CRD
    /// version's `selectableFields` JSON paths (without the leading dot).
    pub fn custom_resource(namespaced: bool, selectable_fields: &[&str]) -> FieldLabels {
        let mut supported = vec!["metadata.name"];
        if namespaced {
            supported.push("metadata.namespace");
        }
        supported.extend_from_slice(selectable_fields);
        FieldLabels::listed(&supported, &[])
    }

    /// The canonical name of `field`, or kube's rejection of it.
    pub fn convert<'a>(&'a self, field: &'a str) -> Result<&'a str, SelectorError> {
        match self {
            FieldLabels::MetadataOnly => match field {
                "metadata.name" | "metadata.namespace" => Ok(field),
                _ => Err(SelectorError::UnsupportedField(format!(
                    "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                    go_quote(field)
                ))),
            },
            FieldLabels::Listed { supported, aliases } => {
                if supported.iter().any(|s| s == field) {
                    return Ok(field);
                }
                if let Some((_, canonical)) = aliases.iter().find(|(alias, _)| alias == field) {
                    return Ok(canonical);
                }
                Err(SelectorError::UnsupportedField(format!("field label not supported: {field}")))
            }
        }
    }
}
