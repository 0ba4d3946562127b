//! kube's list continue token (`k8s.io/apiserver/pkg/storage/continue.go`).
//!
//! A paginated LIST hands out `metadata.continue`; the client sends it back as
//! `?continue=` to get the next page. kube calls the token opaque but its
//! format is "a public API struct and cannot change", and clients, proxies and
//! kube's own e2e tests can decode it, so listwatch produces the same bytes:
//!
//! ```text
//! base64url-no-padding( {"v":"meta.k8s.io/v1","rv":<int64>,"start":"<key>"} )
//! ```
//!
//! * `rv` is the revision the first page was read at; every page is read at
//!   that revision so the pages form one consistent snapshot. A negative `rv`
//!   (kube uses `-1`) asks for an *inconsistent* continuation at the latest
//!   revision; kube hands such a token out with a 410 when the original
//!   revision was compacted (spec §7.4).
//! * `start` is the key to resume from, relative to the collection's key
//!   prefix (e.g. `/registry/pods/default/`): the last key returned with a NUL
//!   byte appended, the smallest key after it ([`ContinueToken::for_next_page`]).
//!
//! Encoding reproduces Go's `encoding/json` string escaping (`<`, `>`, `&`,
//! U+2028 and U+2029 as `\u....`, NUL as `\u0000`, backspace as `\b`; see
//! listwatch-gocompat's `json::Escaping::EncodingJson`), so the token for a
//! given key and revision is byte-identical to kube's.
//!
//! [`ContinueToken::decode`] applies kube's checks in kube's order and with
//! kube's messages ([`ContinueError`]); kube-apiserver answers them with
//! `400 BadRequest` and the message `invalid continue token: <error>`
//! ([`ContinueError::status_message`]):
//!
//! * not base64url: `continue key is not valid: illegal base64 data at input byte 4`
//!   (Go's `base64.RawURLEncoding`, which skips CR and LF and ignores
//!   non-zero trailing bits, reproduced byte for byte);
//! * not the JSON struct: `continue key is not valid: <encoding/json error>`, e.g.
//!   `invalid character 'x' looking for beginning of value`,
//!   `unexpected end of JSON input`,
//!   `json: cannot unmarshal string into Go struct field continueToken.rv of type int64`
//!   (Go's syntax checker and its field matching, which is case-insensitive
//!   and keeps the first type error, are reproduced);
//! * `v` other than `meta.k8s.io/v1`: `continue key is not valid: server does not recognize this encoded version <v>`;
//! * `rv` zero or absent: `continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)`;
//! * `start` empty or absent: `continue key is not valid: encoded start key empty (version meta.k8s.io/v1)`;
//! * `start` that `path.Clean` would change (`..`, `//`, a trailing `/`), the
//!   guard against escaping the collection prefix: `continue key is not valid: <start>`.
//!
//! The Go emulations behind those messages: listwatch-gocompat's `base64`
//! (Go's base64url decoding and its error offsets) and `json` (Go's JSON
//! syntax errors), and `go_json_errors` here (Go's field matching for the
//! token struct).

use std::fmt;

mod go_json_errors;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use listwatch_gocompat::base64::{corrupt_input, decode_raw_url};
use listwatch_gocompat::json::{Escaping, push_quoted};

use self::go_json_errors::decode_token_json;

/// The token format version kube writes and accepts.
pub const CONTINUE_TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// The resource version of an inconsistent continuation (continue at the
/// latest revision), as kube writes it into the token of a 410 response.
pub const INCONSISTENT_CONTINUE_RESOURCE_VERSION: i64 = -1;

/// A decoded continue token.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ContinueToken {
    /// The revision to read the next page at; negative means "latest".
    pub resource_version: i64,
    /// The key to start at, relative to the collection's key prefix.
    pub start_key: String,
}

/// Why a continue token was rejected. `Display` is kube's error text;
/// [`ContinueError::status_message`] is the 400 Status message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContinueError {
    /// Not base64url, or not the JSON struct: the decoder's own words.
    #[error("continue key is not valid: {0}")]
    Malformed(String),
    /// `v` is not `meta.k8s.io/v1`.
    #[error("continue key is not valid: server does not recognize this encoded version {0}")]
    UnrecognizedVersion(String),
    /// `rv` is zero or missing.
    #[error("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")]
    InvalidStartResourceVersion,
    /// `start` is empty or missing.
    #[error("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")]
    EmptyStartKey,
    /// `start` is not a clean path, so it could reach outside the collection.
    #[error("continue key is not valid: {0}")]
    UncleanStartKey(String),
    /// Building a token for a key outside the collection prefix (a server bug).
    #[error("unable to encode next field: the key and key prefix do not match {prefix} {key}")]
    KeyOutsidePrefix {
        /// The collection's key prefix.
        prefix: String,
        /// The key that should have started with it.
        key: String,
    },
}

impl ContinueError {
    /// The message of kube's 400 Status for a bad `continue` parameter.
    pub fn status_message(&self) -> String {
        format!("invalid continue token: {self}")
    }
}

impl ContinueToken {
    /// A token resuming at `start_key` (relative to the collection prefix).
    pub fn new(resource_version: i64, start_key: impl Into<String>) -> ContinueToken {
        ContinueToken { resource_version, start_key: start_key.into() }
    }

    /// The token for the page after the one that ended with `last_key` (a
    /// full storage key), read at `resource_version`: the next page starts
    /// at `last_key` + NUL, the first key after it (kube's etcd3 store).
    ///
    /// Like kube's `EncodeContinue`, this fails when `last_key` does not
    /// start with `key_prefix`, and also when `key_prefix` is empty, since
    /// kube detects a mismatch by the prefix strip leaving the key unchanged.
    pub fn for_next_page(
        last_key: &str,
        key_prefix: &str,
        resource_version: i64,
    ) -> Result<ContinueToken, ContinueError> {
        let next_key = format!("{last_key}\0");
        match next_key.strip_prefix(key_prefix) {
            Some(relative) if !key_prefix.is_empty() => Ok(ContinueToken::new(resource_version, relative)),
            _ => Err(ContinueError::KeyOutsidePrefix { prefix: key_prefix.to_owned(), key: next_key }),
        }
    }

    /// The same position at another revision, e.g. the `rv: -1` token kube
    /// returns with a 410 for an expired one.
    pub fn at_resource_version(&self, resource_version: i64) -> ContinueToken {
        ContinueToken::new(resource_version, self.start_key.clone())
    }

    /// Whether this is an inconsistent continuation (negative revision).
    pub fn is_inconsistent(&self) -> bool {
        self.resource_version < 0
    }

    /// The full storage key to start at, given the collection's key prefix.
    pub fn start_key_under(&self, key_prefix: &str) -> String {
        format!("{key_prefix}{}", self.start_key)
    }

    /// The token's wire form.
    pub fn encode(&self) -> String {
        let mut json = String::with_capacity(48 + self.start_key.len());
        json.push_str("{\"v\":\"");
        json.push_str(CONTINUE_TOKEN_VERSION);
        json.push_str("\",\"rv\":");
        json.push_str(&self.resource_version.to_string());
        json.push_str(",\"start\":");
        push_quoted(&mut json, &self.start_key, Escaping::EncodingJson);
        json.push('}');
        URL_SAFE_NO_PAD.encode(json)
    }

    /// Parses and validates a `continue` parameter (kube's `DecodeContinue`).
    /// The returned `start_key` is cleaned and relative (a leading `/` in the
    /// token is dropped, as kube's prefix join does).
    pub fn decode(token: &str) -> Result<ContinueToken, ContinueError> {
        let data =
            decode_raw_url(token.as_bytes()).map_err(|offset| ContinueError::Malformed(corrupt_input(offset)))?;
        let fields = decode_token_json(&data).map_err(ContinueError::Malformed)?;
        let version = fields.version.unwrap_or_default();
        if version != CONTINUE_TOKEN_VERSION {
            return Err(ContinueError::UnrecognizedVersion(version));
        }
        let resource_version = fields.resource_version.unwrap_or(0);
        if resource_version == 0 {
            return Err(ContinueError::InvalidStartResourceVersion);
        }
        let start = fields.start.unwrap_or_default();
        if start.is_empty() {
            return Err(ContinueError::EmptyStartKey);
        }
        let rooted = if start.starts_with('/') { start.clone() } else { format!("/{start}") };
        let cleaned = clean_rooted_path(&rooted);
        if cleaned != rooted {
            return Err(ContinueError::UncleanStartKey(start));
        }
        Ok(ContinueToken::new(resource_version, &cleaned[1..]))
    }
}

impl fmt::Display for ContinueToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.encode())
    }
}

/// Go's `path.Clean` for a path starting with `/`: collapse `//`, drop `.`,
/// resolve `..` (never above the root), drop a trailing `/`.
fn clean_rooted_path(path: &str) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            segment => segments.push(segment),
        }
    }
    format!("/{}", segments.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(json: &str) -> String {
        URL_SAFE_NO_PAD.encode(json)
    }

    fn decode_err(token: &str) -> String {
        ContinueToken::decode(token).unwrap_err().to_string()
    }

    #[test]
    fn encodes_exactly_like_kube() {
        let token = ContinueToken::new(123, "foo\0");
        let encoded = token.encode();
        let json = URL_SAFE_NO_PAD.decode(&encoded).unwrap();
        assert_eq!(String::from_utf8(json).unwrap(), r#"{"v":"meta.k8s.io/v1","rv":123,"start":"foo\u0000"}"#);
        // The token kube's etcd3 store hands out for the page after "foo".
        assert_eq!(encoded, "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzLCJzdGFydCI6ImZvb1x1MDAwMCJ9");
        assert!(!encoded.contains('='));
        assert_eq!(token.to_string(), encoded);

        let odd = ContinueToken::new(-1, "a<b>&\"c\"\\\n\t\u{1}\u{2028}é");
        let json = String::from_utf8(URL_SAFE_NO_PAD.decode(odd.encode()).unwrap()).unwrap();
        assert_eq!(json, r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"a\u003cb\u003e\u0026\"c\"\\\n\t\u0001\u2028é"}"#);

        // kube marshals the token with encoding/json, which writes these two short since Go 1.22.
        let json = URL_SAFE_NO_PAD.decode(ContinueToken::new(1, "a\u{8}\u{c}").encode()).unwrap();
        assert_eq!(String::from_utf8(json).unwrap(), r#"{"v":"meta.k8s.io/v1","rv":1,"start":"a\b\f"}"#);
    }

    #[test]
    fn round_trips() {
        for token in [
            ContinueToken::new(5, "default/web-0\0"),
            ContinueToken::new(-1, "x\0"),
            ContinueToken::new(i64::MAX, "a/b/c\0"),
            ContinueToken::new(7, "a<b>&\"c\"é\u{2028}"),
        ] {
            assert_eq!(ContinueToken::decode(&token.encode()).unwrap(), token);
        }
    }

    #[test]
    fn next_page_tokens() {
        let token =
            ContinueToken::for_next_page("/registry/pods/default/web-1", "/registry/pods/default/", 42).unwrap();
        assert_eq!(token, ContinueToken::new(42, "web-1\0"));
        assert_eq!(token.start_key_under("/registry/pods/default/"), "/registry/pods/default/web-1\0");
        let across = ContinueToken::for_next_page("/registry/pods/ns/a", "/registry/pods/", 1).unwrap();
        assert_eq!(across.start_key, "ns/a\0");
        assert_eq!(
            ContinueToken::for_next_page("/registry/configmaps/a", "/registry/pods/", 1).unwrap_err().to_string(),
            "unable to encode next field: the key and key prefix do not match /registry/pods/ /registry/configmaps/a\0"
        );
        assert!(ContinueToken::for_next_page("/a", "", 1).is_err());
        let expired = token.at_resource_version(INCONSISTENT_CONTINUE_RESOURCE_VERSION);
        assert!(expired.is_inconsistent());
        assert!(!token.is_inconsistent());
        assert_eq!(expired.start_key, "web-1\0");
    }

    #[test]
    fn accepts_what_kube_accepts() {
        // A leading slash is allowed and dropped.
        let token = ContinueToken::decode(&b64(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"/foo"}"#)).unwrap();
        assert_eq!(token, ContinueToken::new(3, "foo"));
        // Negative revisions mean "continue at the latest revision".
        let token = ContinueToken::decode(&b64(r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"a\u0000"}"#)).unwrap();
        assert_eq!(token.resource_version, -1);
        // Go matches field names case-insensitively and ignores unknown ones.
        let token =
            ContinueToken::decode(&b64(r#" {"V":"meta.k8s.io/v1","RV":9,"Start":"x","other":[1,{}]} "#)).unwrap();
        assert_eq!(token, ContinueToken::new(9, "x"));
        // Later duplicates win; null leaves a field alone.
        let token =
            ContinueToken::decode(&b64(r#"{"v":"meta.k8s.io/v1","rv":1,"rv":2,"start":"x","start":null}"#)).unwrap();
        assert_eq!(token, ContinueToken::new(2, "x"));
        // CR and LF inside the base64 are skipped, as by Go.
        let encoded = ContinueToken::new(4, "k").encode();
        let (head, tail) = encoded.split_at(5);
        assert_eq!(ContinueToken::decode(&format!("{head}\r\n{tail}\n")).unwrap(), ContinueToken::new(4, "k"));
        // Go ignores non-zero bits left over in the last character.
        assert!(decode_raw_url(b"QR").is_ok());
        assert_eq!(decode_raw_url(b"QR").unwrap(), decode_raw_url(b"QQ").unwrap());
    }

    #[test]
    fn rejects_with_kube_messages() {
        assert_eq!(
            decode_err(&b64(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"x"}"#)),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode_err(&b64(r#"{"v":"meta.k8s.io/v1","start":"x"}"#)),
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode_err(&b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":""}"#)),
            "continue key is not valid: encoded start key empty (version meta.k8s.io/v1)"
        );
        assert_eq!(
            decode_err(&b64(r#"{"v":"meta.k8s.io/v2","rv":1,"start":"x"}"#)),
            "continue key is not valid: server does not recognize this encoded version meta.k8s.io/v2"
        );
        assert_eq!(
            decode_err(&b64("{}")),
            "continue key is not valid: server does not recognize this encoded version "
        );
        assert_eq!(
            decode_err(&b64("null")),
            "continue key is not valid: server does not recognize this encoded version "
        );
        for unclean in ["../etc", "a/../../b", "a//b", "a/", "./a", "a/."] {
            let token = b64(&format!(r#"{{"v":"meta.k8s.io/v1","rv":1,"start":"{unclean}"}}"#));
            assert_eq!(decode_err(&token), format!("continue key is not valid: {unclean}"), "{unclean}");
        }
        let error = ContinueToken::decode(&b64(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"a/.."}"#)).unwrap_err();
        assert_eq!(error.status_message(), "invalid continue token: continue key is not valid: a/..");
    }

    #[test]
    fn base64_errors_report_go_offsets() {
        assert_eq!(decode_err("abc!"), "continue key is not valid: illegal base64 data at input byte 3");
        assert_eq!(decode_err("eyJ2IjoibWV0YS=="), "continue key is not valid: illegal base64 data at input byte 14");
        assert_eq!(decode_err("a+b/"), "continue key is not valid: illegal base64 data at input byte 1");
        // A lone character in the last group is reported at its position.
        assert_eq!(decode_err("abcde"), "continue key is not valid: illegal base64 data at input byte 4");
        assert_eq!(decode_err("abcd\ne"), "continue key is not valid: illegal base64 data at input byte 5");
        assert_eq!(decode_err(" "), "continue key is not valid: illegal base64 data at input byte 0");
        // The empty string decodes to no bytes, which is not JSON.
        assert_eq!(decode_err(""), "continue key is not valid: unexpected end of JSON input");
    }

    #[test]
    fn json_errors_are_go_encoding_json_errors() {
        let cases = [
            ("x", "invalid character 'x' looking for beginning of value"),
            ("{", "unexpected end of JSON input"),
            (r#"{"v""#, "unexpected end of JSON input"),
            (r#"{"v" 1}"#, "invalid character '1' after object key"),
            (r#"{"v":1 2}"#, "invalid character '2' after object key:value pair"),
            (r#"{"v":1,}"#, "invalid character '}' looking for beginning of object key string"),
            ("{v:1}", "invalid character 'v' looking for beginning of object key string"),
            (r#"{"a":[1 2]}"#, "invalid character '2' after array element"),
            (r#"{"a":[1,]}"#, "invalid character ']' looking for beginning of value"),
            (r#"{"a":tru}"#, "invalid character '}' in literal true (expecting 'e')"),
            (r#"{"a":nul"#, "invalid character ' ' in literal null (expecting 'l')"),
            (r#"{"a":-}"#, "invalid character '}' in numeric literal"),
            (r#"{"a":1.}"#, "invalid character '}' after decimal point in numeric literal"),
            (r#"{"a":1e}"#, "invalid character '}' in exponent of numeric literal"),
            (r#"{"a":1."#, "invalid character ' ' after decimal point in numeric literal"),
            (r#"{"a":01}"#, "invalid character '1' after object key:value pair"),
            (r#"{"a":"\x"}"#, "invalid character 'x' in string escape code"),
            (r#"{"a":"\u12"}"#, "invalid character '\"' in \\u hexadecimal character escape"),
            ("{\"a\":\"\u{1}\"}", "invalid character '\\x01' in string literal"),
            ("{\"a\":'x'}", "invalid character '\\'' looking for beginning of value"),
            ("{}{}", "invalid character '{' after top-level value"),
            ("\"x\"", "json: cannot unmarshal string into Go value of type storage.continueToken"),
            ("5", "json: cannot unmarshal number into Go value of type storage.continueToken"),
            ("[]", "json: cannot unmarshal array into Go value of type storage.continueToken"),
            ("true", "json: cannot unmarshal bool into Go value of type storage.continueToken"),
            (r#"{"rv":"5"}"#, "json: cannot unmarshal string into Go struct field continueToken.rv of type int64"),
            (r#"{"rv":1.5}"#, "json: cannot unmarshal number 1.5 into Go struct field continueToken.rv of type int64"),
            (r#"{"rv":1e3}"#, "json: cannot unmarshal number 1e3 into Go struct field continueToken.rv of type int64"),
            (
                r#"{"rv":99999999999999999999}"#,
                "json: cannot unmarshal number 99999999999999999999 into Go struct field continueToken.rv of type int64",
            ),
            (
                r#"{"v":1,"rv":"x"}"#,
                "json: cannot unmarshal number into Go struct field continueToken.v of type string",
            ),
            (
                r#"{"start":{},"v":true}"#,
                "json: cannot unmarshal object into Go struct field continueToken.start of type string",
            ),
            (
                r#"{"START":[1]}"#,
                "json: cannot unmarshal array into Go struct field continueToken.start of type string",
            ),
        ];
        for (json, expected) in cases {
            assert_eq!(decode_err(&b64(json)), format!("continue key is not valid: {expected}"), "{json}");
        }
        // Bytes that are not UTF-8 are quoted like Go's quoteChar.
        assert_eq!(
            decode_err(&URL_SAFE_NO_PAD.encode([0xe9])),
            "continue key is not valid: invalid character 'é' looking for beginning of value"
        );
        assert_eq!(
            decode_err(&URL_SAFE_NO_PAD.encode([0x85])),
            "continue key is not valid: invalid character '\\u0085' looking for beginning of value"
        );
    }

    #[test]
    fn deep_nesting_is_a_syntax_error_not_a_stack_overflow() {
        let deep = "[".repeat(100_000);
        assert_eq!(decode_err(&b64(&deep)), "continue key is not valid: invalid character '[' exceeded max depth");
        // Within Go's limit the checker recurses once per level: the server's request threads
        // have 16 MiB stacks for that (a test thread has 2 MiB).
        let ok_depth = format!("{}{}", "[".repeat(9_999), "]".repeat(9_999));
        let answer = std::thread::Builder::new()
            .stack_size(16 << 20)
            .spawn(move || decode_err(&b64(&ok_depth)))
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(
            answer,
            "continue key is not valid: json: cannot unmarshal array into Go value of type storage.continueToken"
        );
    }

    #[test]
    fn json_strings_decode_like_go() {
        let token =
            ContinueToken::decode(&b64(r#"{"v":"meta.k8s.io\/v1","rv":1,"start":"\ud83d\ude00\u00e9\ud800x"}"#))
                .unwrap();
        assert_eq!(token.start_key, "😀é\u{fffd}x");
    }
}
