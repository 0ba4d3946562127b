//! Go's behaviours that clients can observe, each written once.
//!
//! kube-apiserver and client-go are Go programs, and a client can tell when listwatch answers
//! with other words or other bytes than theirs: the texts of `encoding/json`'s errors in a 400,
//! the escaping inside a continue token or a FieldsV1 key, a `%q`-quoted value in a field error,
//! the offset in `illegal base64 data at input byte 4`, the age `2d3h` in a Table, the order a
//! stable sort leaves ties in. This crate holds those behaviours, free of any Kubernetes type
//! and of every other listwatch crate (it is the bottom floor: they all may use it), so that
//! each is reproduced in one place and tested there:
//!
//! | module | Go |
//! |---|---|
//! | [`json`] | `encoding/json`: the kind names and `UnmarshalTypeError`s, the scanner's syntax errors, `json.Marshal`'s string escaping (and json-iterator's), numbers and sorted keys |
//! | [`quote`] | `strconv.Quote` (the `%q` verb) and its printability test |
//! | [`fmt`] | `fmt`'s `%v` and `%s` of decoded JSON (`map[a:1]`, `%!s(int64=1)`), Go type names, `%v` of a `float64` |
//! | [`base64`] | `encoding/base64`'s `RawURLEncoding` decoding and `StdEncoding`'s error offsets |
//! | [`time`] | the civil calendar behind RFC 3339 (`metav1.Time`, `MicroTime`), and `time.Parse`'s errors for those layouts |
//! | [`duration`] | `k8s.io/apimachinery/pkg/util/duration.HumanDuration` (ages in tables) |
//! | [`quantity`] | `resource.ParseQuantity`'s errors |
//! | [`sort`] | `sort.SliceStable`, step for step |
//! | `tls` (feature `rustls`) | `crypto/tls`'s `InsecureSkipVerify` as a rustls certificate verifier |
//!
//! What is Go compatibility tied to one crate's own types stays there (the protobuf schema's
//! Go type names in listwatch-proto, the continue token's field matching in listwatch-meta).

pub mod base64;
pub mod duration;
pub mod fmt;
pub mod json;
pub mod quantity;
pub mod quote;
pub mod sort;
pub mod time;
#[cfg(feature = "rustls")]
pub mod tls;
