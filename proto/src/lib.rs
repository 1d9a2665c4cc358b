//! fleetgate's gRPC contract (`fleetgate.v1`): the spoke stream and the admin
//! (integration) API, generated from `proto/fleetgate/v1/*.proto` with prost
//! and tonic. `FILE_DESCRIPTOR_SET` feeds gRPC server reflection.
//!
//! Layers: the gRPC contract; imports only `fleetgate-policy` (for conversions), never the
//! hub or the spoke, which import it.
#![forbid(unsafe_code)]

pub mod codec;
pub mod report_parts;

/// Generated messages, clients (`*_client`) and servers (`*_server`).
pub mod v1 {
    #![allow(clippy::all, clippy::pedantic, missing_docs)]
    tonic::include_proto!("fleetgate.v1");
}

/// The encoded `FileDescriptorSet` of every fleetgate proto file (with imports),
/// for `tonic-reflection`.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/fleetgate_descriptor.bin"));

pub use v1::admin_service_client::AdminServiceClient;
pub use v1::admin_service_server::{AdminService, AdminServiceServer};
pub use v1::spoke_service_client::SpokeServiceClient;
pub use v1::spoke_service_server::{SpokeService, SpokeServiceServer};

/// Converts between `chrono` instants and `google.protobuf.Timestamp`.
pub mod time {
    use chrono::{DateTime, TimeZone, Utc};
    use prost_types::Timestamp;

    /// An instant as a protobuf timestamp.
    pub fn to_timestamp(at: DateTime<Utc>) -> Timestamp {
        Timestamp {
            seconds: at.timestamp(),
            nanos: i32::try_from(at.timestamp_subsec_nanos()).unwrap_or(0),
        }
    }

    /// A protobuf timestamp as an instant; `None` when it is out of range.
    pub fn from_timestamp(ts: &Timestamp) -> Option<DateTime<Utc>> {
        let nanos = u32::try_from(ts.nanos).ok()?;
        Utc.timestamp_opt(ts.seconds, nanos).single()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn descriptor_set_holds_both_services() {
        let fds = prost_types::FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).unwrap();
        let services: Vec<_> = fds
            .file
            .iter()
            .flat_map(|f| f.service.iter().filter_map(|s| s.name.clone()))
            .collect();
        assert!(services.contains(&"SpokeService".to_string()));
        assert!(services.contains(&"AdminService".to_string()));
        // Imports are included so reflection clients can resolve Timestamp.
        assert!(
            fds.file
                .iter()
                .any(|f| f.name() == "google/protobuf/timestamp.proto")
        );
    }

    #[test]
    fn timestamps_round_trip() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-11-27T07:00:00.25Z")
            .unwrap()
            .to_utc();
        assert_eq!(time::from_timestamp(&time::to_timestamp(at)), Some(at));
        let bad = prost_types::Timestamp {
            seconds: 0,
            nanos: -1,
        };
        assert_eq!(time::from_timestamp(&bad), None);
    }
}
