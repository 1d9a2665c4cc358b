//! The prost codec of every generated client and server, with small initial
//! buffers: tonic allocates an encode and a decode buffer per stream (8 KiB
//! each by default), which dominated the hub's memory per connected spoke.
//!
//! Decoding an `admin.proto` message also refuses text PostgreSQL cannot
//! store (U+0000, see `fleetgate_policy::text`) with INVALID_ARGUMENT naming
//! the field (`manifest`, `clusters[2]`), before any handler runs: no
//! AdminService method can forget the check. Spoke messages are not checked
//! here: what a cluster reports is stored with U+0000 replaced instead.

use std::marker::PhantomData;
use std::sync::OnceLock;

use prost::bytes::Buf;
use prost::{Message, Name};
use prost_reflect::{DescriptorPool, DynamicMessage, MapKey, MessageDescriptor, Value};
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

/// The proto file whose messages must hold storable text only.
const CHECKED_FILE: &str = "fleetgate/v1/admin.proto";

/// Initial size of a stream's encode and decode buffer. Spoke messages are
/// tiny (Hello, keepalive ~20 B) or small (snapshot ~0.5–2 KiB); larger
/// messages grow the buffer once, on demand, so this bounds only the idle
/// cost (256 B measured ~1 KiB less hub RSS per spoke than 1 KiB).
pub const BUFFER_SIZE: usize = 256;

/// Encoded bytes gathered before a stream yields them to HTTP/2 (tonic's
/// default is 32 KiB; a batch is only built when messages queue up). The
/// receiver copies each HTTP/2 DATA frame into its stream's decode buffer,
/// which keeps its largest size, so a spoke sending the parts of a report
/// (`report_parts::PART_BYTES`) in 32 KiB batches would still grow the hub's
/// buffer per stream to 16 KiB (a full frame).
pub const YIELD_THRESHOLD: usize = 4 * 1024;

/// `tonic_prost::ProstCodec` with [`BUFFER_SIZE`] buffers (see the module docs).
#[derive(Debug, Clone)]
pub struct SmallBufferCodec<T, U>(PhantomData<(T, U)>);

impl<T, U> Default for SmallBufferCodec<T, U> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

fn settings() -> BufferSettings {
    BufferSettings::new(BUFFER_SIZE, YIELD_THRESHOLD)
}

impl<T, U> Codec for SmallBufferCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Name + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = CheckedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        CheckedDecoder {
            inner: ProstCodec::<T, U>::raw_decoder(settings()),
            checked: checked_descriptor(&U::full_name()),
        }
    }
}

/// The prost decoder, refusing unstorable text in `admin.proto` messages.
#[derive(Debug)]
pub struct CheckedDecoder<U> {
    inner: ProstDecoder<U>,
    /// The message's descriptor when its strings are checked.
    checked: Option<MessageDescriptor>,
}

impl<U: Message + Default> Decoder for CheckedDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, buf: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let Some(desc) = &self.checked else {
            return self.inner.decode(buf);
        };
        let bytes = buf.copy_to_bytes(buf.remaining());
        // A message that does not decode is left to prost's own error below.
        if let Ok(msg) = DynamicMessage::decode(desc.clone(), bytes.clone())
            && let Err(path) = storable(&msg)
        {
            let field = if path.is_empty() { "request" } else { &path };
            return Err(Status::invalid_argument(format!(
                "{field}: {}",
                fleetgate_policy::text::MESSAGE
            )));
        }
        U::decode(bytes)
            .map(Some)
            .map_err(|e| Status::internal(e.to_string()))
    }

    fn buffer_settings(&self) -> BufferSettings {
        self.inner.buffer_settings()
    }
}

include!(concat!(env!("OUT_DIR"), "/checked_messages.rs"));

static POOL: OnceLock<Option<DescriptorPool>> = OnceLock::new();

fn pool() -> Option<&'static DescriptorPool> {
    POOL.get_or_init(|| DescriptorPool::decode(crate::FILE_DESCRIPTOR_SET).ok())
        .as_ref()
}

/// Whether this process has built the descriptor pool (for tests: a spoke,
/// which decodes no `admin.proto` message, must not).
#[doc(hidden)]
pub fn descriptor_pool_built() -> bool {
    POOL.get().is_some()
}

/// The descriptor of `full_name` if it is declared in [`CHECKED_FILE`]. The
/// pool (~2.5 MiB of heap: every file's descriptors with their comments) is
/// built only for such a message: the spoke's decoders never build it.
fn checked_descriptor(full_name: &str) -> Option<MessageDescriptor> {
    if CHECKED_MESSAGES.binary_search(&full_name).is_err() {
        return None;
    }
    pool()?
        .get_message_by_name(full_name)
        .filter(|d| d.parent_file().name() == CHECKED_FILE)
}

/// The path of the first field holding unstorable text, as `Err`.
fn storable(msg: &DynamicMessage) -> Result<(), String> {
    for (field, value) in msg.fields() {
        check_value(value).map_err(|rest| format!("{}{rest}", field.name()))?;
    }
    Ok(())
}

/// `Err` with the path below `value` (`""`, `[3]`, `.name`, `["key"]`).
fn check_value(value: &Value) -> Result<(), String> {
    let ok = fleetgate_policy::text::storable;
    match value {
        Value::String(s) if !ok(s) => Err(String::new()),
        Value::Message(m) => storable(m).map_err(|p| format!(".{p}")),
        Value::List(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_value(v).map_err(|p| format!("[{i}]{p}"))),
        Value::Map(map) => map.iter().try_for_each(|(k, v)| {
            let key = match k {
                MapKey::String(s) if !ok(s) => return Err(String::new()),
                MapKey::String(s) => format!("{s:?}"),
                other => format!("{other:?}"),
            };
            check_value(v).map_err(|p| format!("[{key}]{p}"))
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::codec::{Decoder, Encoder};

    #[test]
    fn admin_messages_with_nul_are_refused_naming_the_field() {
        use crate::v1;
        let decode = |bytes: Vec<u8>| {
            let desc = checked_descriptor(&v1::CreateOverrideRequest::full_name()).unwrap();
            let msg = DynamicMessage::decode(desc, bytes.as_slice()).unwrap();
            storable(&msg)
        };
        let mut req = v1::CreateOverrideRequest {
            gate: "g".into(),
            clusters: vec!["a".into(), "b\0c".into()],
            ..Default::default()
        };
        assert_eq!(decode(req.encode_to_vec()), Err("clusters[1]".into()));
        req.clusters.clear();
        req.reason = "\u{1}\u{1F600}".into();
        assert_eq!(decode(req.encode_to_vec()), Ok(()));
        // Spoke messages are reports: stored with U+0000 replaced, not refused.
        assert!(checked_descriptor(&v1::StatusReport::full_name()).is_none());
    }

    #[test]
    fn checked_messages_are_those_of_the_checked_file() {
        let pool = DescriptorPool::decode(crate::FILE_DESCRIPTOR_SET).unwrap();
        let mut want: Vec<String> = pool
            .all_messages()
            .filter(|m| m.parent_file().name() == CHECKED_FILE)
            .map(|m| m.full_name().to_owned())
            .collect();
        want.sort();
        assert!(!want.is_empty());
        assert_eq!(CHECKED_MESSAGES, want);
        assert!(CHECKED_MESSAGES.contains(&"fleetgate.v1.CreateOverrideRequest"));
        assert!(!CHECKED_MESSAGES.contains(&"fleetgate.v1.StatusReport"));
    }

    #[test]
    fn buffers_are_small() {
        let mut codec =
            SmallBufferCodec::<prost_types::Timestamp, prost_types::Timestamp>::default();
        // `BufferSettings` has no getters; its Debug form shows the size.
        let want = format!("buffer_size: {BUFFER_SIZE},");
        assert!(format!("{:?}", codec.encoder().buffer_settings()).contains(&want));
        assert!(format!("{:?}", codec.decoder().buffer_settings()).contains(&want));
    }
}
