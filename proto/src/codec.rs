//! The prost codec of every generated client and server, with small initial
//! buffers: tonic allocates an encode and a decode buffer per stream (8 KiB
//! each by default), which dominated the hub's memory per connected spoke.

use std::marker::PhantomData;

use prost::Message;
use tonic::codec::{BufferSettings, Codec};
use tonic_prost::{ProstCodec, ProstDecoder, ProstEncoder};

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
    U: Message + Default + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = ProstEncoder<T>;
    type Decoder = ProstDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(settings())
    }

    fn decoder(&mut self) -> Self::Decoder {
        ProstCodec::<T, U>::raw_decoder(settings())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::codec::{Decoder, Encoder};

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
