//! Field errors with values from custom resources, built on crates/meta's [`FieldError`]:
//! the value is rendered the way Go prints a decoded JSON value (see [`crate::go_value`]), and
//! the kinds meta has no constructor for (`TypeInvalid`, `TooMany`, a non-string `Duplicate`)
//! are spelled as kube's `field/errors.go` spells them.

use listwatch_meta::validation::{FieldError, FieldErrorType};
use serde_json::Value;

use crate::go_value::bad_value;
use crate::path::FieldPath;

fn with_value(path: &FieldPath, error_type: FieldErrorType, value: &str, detail: &str) -> FieldError {
    let mut message = format!("{}: {value}", error_type.label());
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(detail);
    }
    FieldError { field: path.to_string(), error_type, message }
}

/// `Invalid value: <value>: <detail>` for a JSON value.
pub fn invalid(path: &FieldPath, value: &Value, detail: &str) -> FieldError {
    with_value(path, FieldErrorType::Invalid, &bad_value(value), detail)
}

/// `Invalid value: <value>: <detail>` with the value already rendered as Go prints it.
pub fn invalid_raw(path: &FieldPath, value: &str, detail: &str) -> FieldError {
    with_value(path, FieldErrorType::Invalid, value, detail)
}

/// `field.TypeInvalid`: `Invalid value: <value>: <detail>`, reason `FieldValueTypeInvalid`.
pub fn type_invalid(path: &FieldPath, value: &Value, detail: &str) -> FieldError {
    with_value(path, FieldErrorType::TypeInvalid, &bad_value(value), detail)
}

/// `field.NotSupported` for a JSON value.
pub fn not_supported(path: &FieldPath, value: &Value, supported: &[String]) -> FieldError {
    let refs: Vec<&str> = supported.iter().map(String::as_str).collect();
    FieldError::not_supported(path.to_string(), &bad_value(value), &refs)
}

/// `field.TooMany`: `Too many: <actual>: must have at most <max> items`.
pub fn too_many(path: &FieldPath, actual: i64, max: i64) -> FieldError {
    with_value(path, FieldErrorType::TooMany, &actual.to_string(), &format!("must have at most {max} items"))
}

/// `field.Duplicate` for a JSON value.
pub fn duplicate(path: &FieldPath, value: &Value) -> FieldError {
    with_value(path, FieldErrorType::Duplicate, &bad_value(value), "")
}

/// `field.Required`.
pub fn required(path: &FieldPath, detail: &str) -> FieldError {
    FieldError::required(path.to_string(), detail)
}

/// `field.Forbidden`.
pub fn forbidden(path: &FieldPath, detail: &str) -> FieldError {
    FieldError::forbidden(path.to_string(), detail)
}
