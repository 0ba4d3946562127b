//! Field errors, the `(field, reason, message)` causes of a 422 `Invalid` Status, with the texts
//! of kube's `k8s.io/apimachinery/pkg/util/validation/field/errors.go`. Every validator of this
//! crate reports through them, so they sit apart from the name rules; [`super`] re-exports them.

use std::fmt;

use super::go_quote;
use crate::status::{ApiError, StatusCause};

/// The kind of a field error, as kube names it in a Status cause's `reason`
/// (`field.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldErrorType {
    /// `FieldValueNotFound`
    NotFound,
    /// `FieldValueRequired`
    Required,
    /// `FieldValueDuplicate`
    Duplicate,
    /// `FieldValueInvalid`
    Invalid,
    /// `FieldValueNotSupported`
    NotSupported,
    /// `FieldValueForbidden`
    Forbidden,
    /// `FieldValueTooLong`
    TooLong,
    /// `FieldValueTooMany`
    TooMany,
    /// `InternalError`
    Internal,
    /// `FieldValueTypeInvalid`
    TypeInvalid,
}

impl FieldErrorType {
    /// The machine-readable name, used as the cause's `reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "FieldValueNotFound",
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::TooLong => "FieldValueTooLong",
            FieldErrorType::TooMany => "FieldValueTooMany",
            FieldErrorType::Internal => "InternalError",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human-readable name that starts the message (`ErrorType.String`).
    pub fn label(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Invalid | FieldErrorType::TypeInvalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
            FieldErrorType::Internal => "Internal error",
        }
    }
}

impl fmt::Display for FieldErrorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One field-level validation failure: a Status cause
/// `{"reason": error_type, "message": message, "field": field}`.
///
/// `message` is kube's `ErrorBody()`, e.g. `Invalid value: "Foo": a lowercase
/// RFC 1123 subdomain ...`; `Display` is kube's `Error()`: `field: message`,
/// which is how the error appears inside the Status `message`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FieldError {
    /// JSON path of the field, e.g. `metadata.name`.
    pub field: String,
    /// What kind of failure it is.
    pub error_type: FieldErrorType,
    /// The cause message, without the field.
    pub message: String,
}

impl FieldError {
    /// `field.Invalid` for a string value: `Invalid value: "<value>": <detail>`.
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> FieldError {
        FieldError::with_value(field, FieldErrorType::Invalid, &go_quote(value), detail)
    }

    /// `field.Invalid` for a value kube prints without quotes (an integer, or a
    /// Go `%#v` rendering such as `[]string{"x"}`): `Invalid value: <value>: <detail>`.
    pub fn invalid_raw(field: impl Into<String>, value: &str, detail: &str) -> FieldError {
        FieldError::with_value(field, FieldErrorType::Invalid, value, detail)
    }

    /// `field.NotSupported`: `Unsupported value: <value>: supported values: "a", "b"`,
    /// `value` already rendered as kube prints it (see [`FieldError::invalid_raw`]).
    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> FieldError {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        FieldError::with_value(field, FieldErrorType::NotSupported, value, &detail)
    }

    /// `field.Duplicate` for a string value: `Duplicate value: "<value>"`.
    pub fn duplicate(field: impl Into<String>, value: &str) -> FieldError {
        FieldError::with_value(field, FieldErrorType::Duplicate, &go_quote(value), "")
    }

    /// `field.TooLong`: `Too long: may not be more than <max> bytes` (the value is never shown).
    pub fn too_long(field: impl Into<String>, max_bytes: usize) -> FieldError {
        let unit = if max_bytes == 1 { "byte" } else { "bytes" };
        FieldError::without_value(field, FieldErrorType::TooLong, &format!("may not be more than {max_bytes} {unit}"))
    }

    fn with_value(field: impl Into<String>, error_type: FieldErrorType, value: &str, detail: &str) -> FieldError {
        let mut message = format!("{}: {value}", error_type.label());
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldError { field: field.into(), error_type, message }
    }

    /// `field.Required`: `Required value` or `Required value: <detail>`.
    pub fn required(field: impl Into<String>, detail: &str) -> FieldError {
        FieldError::without_value(field, FieldErrorType::Required, detail)
    }

    /// `field.Forbidden`: `Forbidden` or `Forbidden: <detail>`.
    pub fn forbidden(field: impl Into<String>, detail: &str) -> FieldError {
        FieldError::without_value(field, FieldErrorType::Forbidden, detail)
    }

    fn without_value(field: impl Into<String>, error_type: FieldErrorType, detail: &str) -> FieldError {
        let mut message = error_type.label().to_owned();
        if !detail.is_empty() {
            message.push_str(": ");
            message.push_str(detail);
        }
        FieldError { field: field.into(), error_type, message }
    }

    /// The `(field, reason, message)` triple of a Status cause.
    pub fn as_cause(&self) -> (&str, &str, &str) {
        (&self.field, self.error_type.as_str(), &self.message)
    }

    /// How kube prints a list of field errors inside a Status message
    /// (`ErrorList.ToAggregate().Error()`): duplicates dropped, one error as
    /// is, several as `[a, b]`. kube's 422 message is then
    /// `<Kind> "<name>" is invalid: <aggregate>`.
    pub fn aggregate(errors: &[FieldError]) -> String {
        let mut seen: Vec<String> = Vec::new();
        for error in errors {
            let text = error.to_string();
            if !seen.contains(&text) {
                seen.push(text);
            }
        }
        match seen.len() {
            1 => seen.remove(0),
            _ => format!("[{}]", seen.join(", ")),
        }
    }
}

/// kube's `errors.NewInvalid(kind, name, errors)`: the 422 `Invalid` Status with one cause per
/// error (duplicates kept, as kube keeps them) and the message
/// `<Kind>[.group] "<name>" is invalid: <aggregate>`.
pub fn invalid_error(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let causes = errors
        .iter()
        .map(|e| {
            let (field, reason, message) = e.as_cause();
            StatusCause::new(reason, message, field)
        })
        .collect();
    ApiError::invalid(group, kind, name, causes)
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_formats_like_kube() {
        let one = FieldError::required("metadata.name", "");
        assert_eq!(one.to_string(), "metadata.name: Required value");
        assert_eq!(FieldError::aggregate(std::slice::from_ref(&one)), "metadata.name: Required value");
        let two = FieldError::forbidden("metadata.namespace", "not allowed on this type");
        assert_eq!(
            FieldError::aggregate(&[one.clone(), two, one]),
            "[metadata.name: Required value, metadata.namespace: Forbidden: not allowed on this type]"
        );
    }
}
