//! The spoke stream's codecs never build the descriptor pool the admin
//! messages' check needs (~2.5 MiB of a spoke's heap). Its own test binary:
//! the pool is per process and other tests build it.

use fleetgate_proto::codec::{SmallBufferCodec, descriptor_pool_built};
use fleetgate_proto::v1::{CreateOverrideRequest, HubMessage, SpokeMessage};
use tonic::codec::Codec;

#[test]
fn spoke_stream_decoders_do_not_build_the_descriptor_pool() {
    // The spoke's side of the stream, then the hub's.
    let _spoke = SmallBufferCodec::<SpokeMessage, HubMessage>::default().decoder();
    let _hub = SmallBufferCodec::<HubMessage, SpokeMessage>::default().decoder();
    assert!(!descriptor_pool_built());
    // An admin request's decoder does: its strings are checked.
    let _admin =
        SmallBufferCodec::<CreateOverrideRequest, CreateOverrideRequest>::default().decoder();
    assert!(descriptor_pool_built());
}
