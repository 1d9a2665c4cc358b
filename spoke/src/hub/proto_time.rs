//! Timestamps out of the hub's messages: a required one missing or out of range makes the
//! snapshot invalid.

use chrono::{DateTime, Utc};
use fleetgate_proto::time::from_timestamp;

use crate::error::{Error, Result};

pub(crate) fn required_time(
    ts: Option<&prost_types::Timestamp>,
    what: &str,
) -> Result<DateTime<Utc>> {
    ts.and_then(from_timestamp)
        .ok_or_else(|| Error::InvalidSnapshot(format!("{what}: missing or out-of-range timestamp")))
}
