//! `POST /debug/listwatch/streams?fault=F&...`: network faults on watch streams, for every
//! stream open now and those opened until the fault expires (see `crate::faults::streams`):
//!
//! * `fault=latency&ms=M[&jitter=J]&for=D`: hold each batch M ± J milliseconds, order kept;
//! * `fault=cut[&for=D]`: cut each stream in the middle of its next event (one shot, or for
//!   streams opened within D too);
//! * `fault=blackhole&for=D`: write nothing for D (connections stay open), then end abnormally;
//! * `fault=stall[&for=D]`: the streams open now (and those opened within D) go silent and
//!   never end, not even at their deadline: a half-open connection only the client's own
//!   timeout notices;
//! * `fault=goaway`: GOAWAY on every HTTP/2 connection open now;
//! * `fault=none`: end latency, cuts not taken yet, blackholes and stalls of streams opened
//!   from now on (stalled streams stay stalled: their peer is gone).

use std::time::Duration;

use listwatch_meta::ApiError;
use serde_json::{Value, json};

use super::params::{duration_param, int_param};
use crate::faults::StreamFault;
use crate::request::Query;
use crate::state::ApiState;

/// Sets the fault the query asks for; answers what was set.
pub fn respond(state: &ApiState, query: &Query) -> Result<Value, ApiError> {
    let fault = query.get("fault").ok_or_else(|| ApiError::bad_request("fault is required"))?;
    let lasting = duration_param(query, "for")?;
    let required = |lasting: Option<Duration>| {
        lasting.ok_or_else(|| ApiError::bad_request(format!("fault={fault} needs for=<duration>")))
    };
    let millis = |name: &str| -> Result<Option<Duration>, ApiError> {
        match int_param(query, name)? {
            Some(ms) if ms < 0 => Err(ApiError::bad_request(format!("{name} must not be negative"))),
            ms => Ok(ms.map(|ms| Duration::from_millis(ms.unsigned_abs()))),
        }
    };
    let seconds = |d: Duration| d.as_secs_f64();
    let (value, answer) = match fault {
        "latency" => {
            let base = millis("ms")?.ok_or_else(|| ApiError::bad_request("fault=latency needs ms=<milliseconds>"))?;
            let jitter = millis("jitter")?.unwrap_or_default();
            let lasting = required(lasting)?;
            let answer = json!({"fault": "latency", "ms": base.as_millis() as u64, "jitter": jitter.as_millis() as u64, "forSeconds": seconds(lasting)});
            (StreamFault::Latency { base, jitter, lasting }, answer)
        }
        "cut" => {
            let lasting = lasting.unwrap_or_default();
            (StreamFault::Cut { lasting }, json!({"fault": "cut", "forSeconds": seconds(lasting)}))
        }
        "blackhole" => {
            let lasting = required(lasting)?;
            (StreamFault::Blackhole { lasting }, json!({"fault": "blackhole", "forSeconds": seconds(lasting)}))
        }
        "stall" => {
            let lasting = lasting.unwrap_or_default();
            (StreamFault::Stall { lasting }, json!({"fault": "stall", "forSeconds": seconds(lasting)}))
        }
        "goaway" if lasting.is_some() => {
            return Err(ApiError::bad_request(
                "fault=goaway takes no for: it is sent once, to the connections open now",
            ));
        }
        "goaway" => (StreamFault::GoAway, json!({"fault": "goaway"})),
        "none" => (StreamFault::None, json!({"fault": "none"})),
        other => {
            return Err(ApiError::bad_request(format!(
                "unknown fault {other:?}: one of latency, cut, blackhole, stall, goaway, none"
            )));
        }
    };
    state.stream_fault(value);
    Ok(answer)
}
