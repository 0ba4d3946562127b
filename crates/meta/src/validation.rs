//! Object name validation, as kube-apiserver does it on create.
//!
//! kube-apiserver checks `metadata.name` (and `metadata.generateName`) with one
//! of a handful of rules picked per resource, and reports failures as a 422
//! `Invalid` Status whose `details.causes` carry `(reason, message, field)`
//! triples. This module reproduces those rules and their exact texts so that a
//! client sees the same Status from listwatch as from a real cluster.
//!
//! The pieces, each mirroring a piece of `k8s.io/apimachinery`:
//!
//! * [`is_dns1123_subdomain`], [`is_dns1123_label`], [`is_dns1035_label`]
//!   (`pkg/util/validation`): return the list of human-readable problems, empty
//!   when the value is valid. The texts embed the regular expression kube uses,
//!   e.g. `a lowercase RFC 1123 subdomain must consist of lower case
//!   alphanumeric characters, '-' or '.', and must start and end with an
//!   alphanumeric character (e.g. 'example.com', regex used for validation is
//!   '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`.
//!   Length problems read `must be no more than 253 characters` (this package
//!   counts "characters"; the newer `api/validate/content` package used for
//!   label keys and values says "bytes", see [`crate::selector`]).
//! * [`is_valid_path_segment_name`] / [`is_valid_path_segment_prefix`]
//!   (`pkg/api/validation/path`): names that only need to be safe as one URL
//!   path segment and one etcd key segment: not `.` or `..`, no `/` or `%`.
//! * [`NameRule`]: which of those a resource uses (kube's `ValidateNameFunc`),
//!   including kube's treatment of `generateName` prefixes, whose trailing
//!   `-` is masked before the check because random characters follow it.
//! * [`validate_object_name`]: the `metadata.name` / `metadata.generateName`
//!   part of `ValidateObjectMetaAccessor`, producing [`FieldError`]s ready for
//!   a 422 `causes` list.
//! * [`generate_name`]: the apiserver's `SimpleNameGenerator`: the base,
//!   truncated to [`MAX_GENERATED_NAME_LENGTH`] bytes, plus five random
//!   characters from kube's consonant-and-digit alphabet.
//! * [`go_quote`]: Go's `strconv.Quote` (the `%q` verb), which kube uses to
//!   show a bad value inside messages (listwatch-gocompat's, re-exported for
//!   the modules here and the crates that build field errors).
//!
//! The texts were read from `k8s.io/apimachinery` `pkg/util/validation/validation.go`,
//! `pkg/util/validation/field/errors.go`, `pkg/api/validation/generic.go`,
//! `pkg/api/validation/objectmeta.go`, `pkg/api/validation/path/name.go` and
//! `k8s.io/apiserver` `pkg/storage/names/generate.go`.

use rand::Rng;

mod field_error;
pub use field_error::*;
pub use listwatch_gocompat::quote::go_quote;

/// Longest DNS-1123 label (RFC 1123 host name label).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest DNS-1035 label.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;

/// The regular expression kube quotes for DNS-1123 labels.
pub const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
/// The regular expression kube quotes for DNS-1123 subdomains.
pub const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
/// The regular expression kube quotes for DNS-1035 labels.
pub const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

/// Longest name kube generates from `generateName` (`maxNameLength` in
/// `pkg/storage/names`): generated names are meant to fit a DNS-1123 label.
pub const MAX_NAME_LENGTH: usize = 63;
/// How many random characters `generateName` appends.
pub const GENERATED_SUFFIX_LENGTH: usize = 5;
/// Longest `generateName` base kept before the random suffix
/// (`MaxGeneratedNameLength` = 63 - 5).
pub const MAX_GENERATED_NAME_LENGTH: usize = MAX_NAME_LENGTH - GENERATED_SUFFIX_LENGTH;
/// The alphabet of the random suffix (`k8s.io/apimachinery/pkg/util/rand`):
/// no vowels and no look-alike digits, so generated names never spell words
/// and are easy to read back.
pub const GENERATED_SUFFIX_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

/// `must be no more than N characters` (`validation.MaxLenError`).
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// kube's `validation.RegexError`: the message, then the examples and the
/// regular expression in parentheses. The double space after each example's
/// comma is kube's (`"'x', " + " or "`) and clients see it verbatim.
pub fn regex_error(message: &str, regex: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{message} (regex used for validation is '{regex}')");
    }
    let mut out = format!("{message} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(regex);
    out.push_str("')");
    out
}

/// Whether `value` matches `[a-z0-9]([-a-z0-9]*[a-z0-9])?` (no length check).
fn matches_dns1123_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    let alnum = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => alnum(first) && alnum(last) && bytes.iter().all(|&b| alnum(b) || b == b'-'),
        _ => false,
    }
}

/// Whether `value` is dot-separated DNS-1123 labels (no length check).
fn matches_dns1123_subdomain(value: &str) -> bool {
    value.split('.').all(matches_dns1123_label)
}

/// Whether `value` matches `[a-z]([-a-z0-9]*[a-z0-9])?` (no length check).
fn matches_dns1035_label(value: &str) -> bool {
    value.as_bytes().first().is_some_and(u8::is_ascii_lowercase) && matches_dns1123_label(value)
}

/// Problems with `value` as a DNS-1123 label (`validation.IsDNS1123Label`).
///
/// A value that would be a valid subdomain only fails for its dots, and kube
/// then says just `must not contain dots`.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errors.push("must not contain dots".to_owned());
        } else {
            errors.push(regex_error(DNS1123_LABEL_ERR_MSG, DNS1123_LABEL_FMT, &["my-name", "123-abc"]));
        }
    }
    errors
}

/// Problems with `value` as a DNS-1123 subdomain (`validation.IsDNS1123Subdomain`).
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errors.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errors.push(regex_error(DNS1123_SUBDOMAIN_ERR_MSG, DNS1123_SUBDOMAIN_FMT, &["example.com"]));
    }
    errors
}

/// Problems with `value` as a DNS-1035 label (`validation.IsDNS1035Label`).
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errors.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errors.push(regex_error(DNS1035_LABEL_ERR_MSG, DNS1035_LABEL_FMT, &["my-name", "abc-123"]));
    }
    errors
}

/// Substrings a path-segment name may not contain, in kube's order.
const PATH_SEGMENT_FORBIDDEN_SUBSTRINGS: [&str; 2] = ["/", "%"];

/// Problems with `name` as a URL path segment (`path.IsValidPathSegmentName`).
///
/// `.` and `..` are reported alone, as kube stops at them.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    is_valid_path_segment_prefix(name)
}

/// Problems with `prefix` as the start of a path segment
/// (`path.IsValidPathSegmentPrefix`): a suffix follows, so `.` and `..` are fine.
pub fn is_valid_path_segment_prefix(prefix: &str) -> Vec<String> {
    PATH_SEGMENT_FORBIDDEN_SUBSTRINGS
        .iter()
        .filter(|forbidden| prefix.contains(*forbidden))
        .map(|forbidden| format!("may not contain '{forbidden}'"))
        .collect()
}

/// Which rule a resource's object names must follow (kube's `ValidateNameFunc`).
///
/// Per `k8s.io/kubernetes/pkg/apis/*/validation`:
///
/// * [`NameRule::Label`]: `namespaces` (`ValidateNamespaceName`), and
///   `services` from Kubernetes 1.36 on (`RelaxedServiceNameValidation`, beta
///   and on by default in 1.36; until 1.35 services used
///   [`NameRule::Dns1035Label`]).
/// * [`NameRule::PathSegment`]: the RBAC kinds `roles`, `clusterroles`,
///   `rolebindings`, `clusterrolebindings` (`ValidateRBACName`), whose names
///   such as `system:controller:x` are not DNS names.
/// * [`NameRule::Subdomain`]: everything else, among them pods, configmaps,
///   secrets, serviceaccounts, nodes, endpoints, events, leases, deployments,
///   replicasets, statefulsets, daemonsets, jobs and custom resources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NameRule {
    /// DNS-1123 subdomain: ≤253 characters, lowercase alphanumerics, `-`, `.`.
    Subdomain,
    /// DNS-1123 label: ≤63 characters, lowercase alphanumerics and `-`.
    Label,
    /// DNS-1035 label: a DNS-1123 label that starts with a letter.
    Dns1035Label,
    /// Anything usable as one path segment: not `.`/`..`, no `/` or `%`.
    PathSegment,
}

impl NameRule {
    /// The rule kube-apiserver applies to names of `resource` in API group
    /// `group` (`""` for the core group), for Kubernetes 1.36 and later.
    pub fn for_resource(group: &str, resource: &str) -> NameRule {
        match (group, resource) {
            ("", "namespaces" | "services") => NameRule::Label,
            ("rbac.authorization.k8s.io", "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings") => {
                NameRule::PathSegment
            }
            _ => NameRule::Subdomain,
        }
    }

    /// The problems with `name`; `is_prefix` says `name` is a `generateName`
    /// base that random characters will follow.
    ///
    /// For DNS rules kube then replaces a trailing `-` before checking
    /// (`maskTrailingDash`), because the suffix makes it a valid inner dash.
    /// kube's mask drops the last *two* bytes and appends `a` (`foo-` is
    /// checked as `foa`); that is reproduced as is. A lone `-`, where kube's
    /// slice expression would panic, is checked as `a`.
    pub fn validate(self, name: &str, is_prefix: bool) -> Vec<String> {
        let masked;
        let name = if is_prefix && self != NameRule::PathSegment && name.ends_with('-') {
            masked = mask_trailing_dash(name);
            masked.as_str()
        } else {
            name
        };
        match self {
            NameRule::Subdomain => is_dns1123_subdomain(name),
            NameRule::Label => is_dns1123_label(name),
            NameRule::Dns1035Label => is_dns1035_label(name),
            NameRule::PathSegment if is_prefix => is_valid_path_segment_prefix(name),
            NameRule::PathSegment => is_valid_path_segment_name(name),
        }
    }
}

/// kube's `maskTrailingDash`: `name[:len(name)-2] + "a"`.
fn mask_trailing_dash(name: &str) -> String {
    let keep = name.len().saturating_sub(2);
    // Names with multi-byte characters are invalid anyway; cut on a character
    // boundary so the (still invalid) result stays a string.
    let keep = (0..=keep).rev().find(|&i| name.is_char_boundary(i)).unwrap_or(0);
    format!("{}a", &name[..keep])
}

/// The name checks of kube's `ValidateObjectMetaAccessor` for a create:
/// `metadata.generateName` (as a prefix) when set, then `metadata.name`,
/// which is required. kube runs this after generating the name, so a
/// `generateName` request normally arrives here with both set.
pub fn validate_object_name(rule: NameRule, name: &str, generate_name: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !generate_name.is_empty() {
        for detail in rule.validate(generate_name, true) {
            errors.push(FieldError::invalid("metadata.generateName", generate_name, &detail));
        }
    }
    if name.is_empty() {
        errors.push(FieldError::required("metadata.name", "name or generateName is required"));
    } else {
        for detail in rule.validate(name, false) {
            errors.push(FieldError::invalid("metadata.name", name, &detail));
        }
    }
    errors
}

/// A name for an object created with `generateName: base`
/// (`names.SimpleNameGenerator`), using the thread-local random generator.
pub fn generate_name(base: &str) -> String {
    generate_name_with(base, &mut rand::rng())
}

/// [`generate_name`] with a caller-chosen random generator, for reproducible tests.
///
/// kube truncates the base to 58 bytes (`base[:58]`); a base whose 58th byte
/// falls inside a multi-byte character is cut before that character instead.
pub fn generate_name_with<R: Rng + ?Sized>(base: &str, rng: &mut R) -> String {
    let mut keep = base.len().min(MAX_GENERATED_NAME_LENGTH);
    while !base.is_char_boundary(keep) {
        keep -= 1;
    }
    let alphabet = GENERATED_SUFFIX_ALPHABET.as_bytes();
    let mut name = String::with_capacity(keep + GENERATED_SUFFIX_LENGTH);
    name.push_str(&base[..keep]);
    for _ in 0..GENERATED_SUFFIX_LENGTH {
        name.push(char::from(alphabet[rng.random_range(0..alphabet.len())]));
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

    #[test]
    fn subdomain_accepts_kube_examples() {
        for name in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "a.a",
            "ab.a",
            "a-1.a",
            "0.a",
            "a.b.c.d.e",
            "aa.bb.cc.dd.ee",
            "1.2.3.4.5",
            &"a".repeat(253),
        ] {
            assert!(is_dns1123_subdomain(name).is_empty(), "{name:?}");
        }
    }

    #[test]
    fn subdomain_rejects_with_kube_message() {
        for name in [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a..b",
            "1.",
            ".1",
            "1..2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            "A.a",
            "aB.a",
            "ab.A",
            "A1.a",
            "a1.A",
            "A.1",
            "aB.1",
            "A1.1",
            "1A.1",
            "0.A",
            "01.A",
            "012.A",
            "1A.a",
            "1a.A",
            "A.B.C.D.E",
            "AA.BB.CC.DD.EE",
            "a.B.c.d.e",
            "aa.bB.cc.dd.ee",
            "a@b",
            "a,b",
            "a\"b",
        ] {
            assert_eq!(is_dns1123_subdomain(name), vec![SUBDOMAIN_MSG], "{name:?}");
        }
        assert_eq!(is_dns1123_subdomain(&"a".repeat(254)), vec!["must be no more than 253 characters".to_owned()]);
        assert_eq!(
            is_dns1123_subdomain(&format!("{}_", "a".repeat(254))),
            vec!["must be no more than 253 characters".to_owned(), SUBDOMAIN_MSG.to_owned()]
        );
    }

    #[test]
    fn label_rules() {
        for name in ["a", "ab", "a-1", "0", "1--a--b--2", &"a".repeat(63)] {
            assert!(is_dns1123_label(name).is_empty(), "{name:?}");
        }
        for name in ["", "A", "a-", "-a", "a_b", "a b", "Foo"] {
            assert_eq!(is_dns1123_label(name), vec![LABEL_MSG], "{name:?}");
        }
        // A valid subdomain fails as a label only for its dots.
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(is_dns1123_label(&"a".repeat(64)), vec!["must be no more than 63 characters"]);
        assert_eq!(
            is_dns1123_label(&format!("{}.a", "a".repeat(62))),
            vec!["must be no more than 63 characters", "must not contain dots"]
        );
    }

    #[test]
    fn dns1035_rules() {
        for name in ["a", "ab", "a-1", "a--1--2--b", &"a".repeat(63)] {
            assert!(is_dns1035_label(name).is_empty(), "{name:?}");
        }
        for name in ["0", "01", "1a", "", "A", "a-", "a.b", "a_b"] {
            assert_eq!(is_dns1035_label(name), vec![DNS1035_MSG], "{name:?}");
        }
    }

    #[test]
    fn path_segment_rules() {
        assert!(is_valid_path_segment_name("system:controller:x").is_empty());
        assert!(is_valid_path_segment_name("Foo_Bar.baz").is_empty());
        assert_eq!(is_valid_path_segment_name("."), vec!["may not be '.'"]);
        assert_eq!(is_valid_path_segment_name(".."), vec!["may not be '..'"]);
        assert!(is_valid_path_segment_name("...").is_empty());
        assert_eq!(is_valid_path_segment_name("a/b"), vec!["may not contain '/'"]);
        assert_eq!(is_valid_path_segment_name("a%b"), vec!["may not contain '%'"]);
        assert_eq!(is_valid_path_segment_name("%/"), vec!["may not contain '/'", "may not contain '%'"]);
        assert!(is_valid_path_segment_prefix("..").is_empty());
        assert_eq!(is_valid_path_segment_prefix("a/"), vec!["may not contain '/'"]);
    }

    #[test]
    fn name_rules_per_resource() {
        assert_eq!(NameRule::for_resource("", "namespaces"), NameRule::Label);
        assert_eq!(NameRule::for_resource("", "services"), NameRule::Label);
        assert_eq!(NameRule::for_resource("", "pods"), NameRule::Subdomain);
        assert_eq!(NameRule::for_resource("", "configmaps"), NameRule::Subdomain);
        assert_eq!(NameRule::for_resource("apps", "deployments"), NameRule::Subdomain);
        assert_eq!(NameRule::for_resource("rbac.authorization.k8s.io", "clusterroles"), NameRule::PathSegment);
        assert_eq!(NameRule::for_resource("example.com", "roles"), NameRule::Subdomain);
    }

    #[test]
    fn prefixes_mask_the_trailing_dash() {
        assert!(NameRule::Subdomain.validate("foo-", true).is_empty());
        assert_eq!(NameRule::Subdomain.validate("foo-", false), vec![SUBDOMAIN_MSG]);
        assert!(NameRule::Label.validate("my-pod-", true).is_empty());
        // kube masks by dropping two bytes: "a.-" is checked as "aa".
        assert!(NameRule::Subdomain.validate("a.-", true).is_empty());
        assert!(NameRule::Subdomain.validate("-", true).is_empty());
        assert_eq!(NameRule::Subdomain.validate("Foo-", true), vec![SUBDOMAIN_MSG]);
        assert!(NameRule::PathSegment.validate("..", true).is_empty());
        assert_eq!(NameRule::PathSegment.validate("..", false), vec!["may not be '..'"]);
    }

    #[test]
    fn object_name_errors_are_status_causes() {
        let errors = validate_object_name(NameRule::Subdomain, "Foo", "");
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].as_cause(),
            ("metadata.name", "FieldValueInvalid", format!("Invalid value: \"Foo\": {SUBDOMAIN_MSG}").as_str())
        );
        assert_eq!(errors[0].to_string(), format!("metadata.name: Invalid value: \"Foo\": {SUBDOMAIN_MSG}"));

        let errors = validate_object_name(NameRule::Subdomain, "", "");
        assert_eq!(
            errors,
            vec![FieldError {
                field: "metadata.name".into(),
                error_type: FieldErrorType::Required,
                message: "Required value: name or generateName is required".into(),
            }]
        );

        let errors = validate_object_name(NameRule::Label, "Web-x7k2p", "Web-");
        assert_eq!(
            errors.iter().map(|e| (e.field.as_str(), e.message.as_str())).collect::<Vec<_>>(),
            vec![
                ("metadata.generateName", format!("Invalid value: \"Web-\": {LABEL_MSG}").as_str()),
                ("metadata.name", format!("Invalid value: \"Web-x7k2p\": {LABEL_MSG}").as_str()),
            ]
        );
        assert!(validate_object_name(NameRule::Subdomain, "web-x7k2p", "web-").is_empty());
    }

    #[test]
    fn generated_names_follow_kube() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let name = generate_name_with("web-", &mut rng);
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..].chars().all(|c| GENERATED_SUFFIX_ALPHABET.contains(c)));

        let long = "a".repeat(100);
        let name = generate_name_with(&long, &mut rng);
        assert_eq!(name.len(), MAX_NAME_LENGTH);
        assert!(name.starts_with(&"a".repeat(58)));
        assert!(is_dns1123_label(&name).is_empty());

        // Cut before a multi-byte character rather than inside it.
        let base = format!("{}é", "a".repeat(57));
        let name = generate_name_with(&base, &mut rng);
        assert_eq!(name.len(), 57 + 5);
        assert_eq!(generate_name("x").len(), 6);
    }
}
