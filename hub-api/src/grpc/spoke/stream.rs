//! The stream of one spoke connection: a hand-written `Stream` that sequences a
//! [`Session`]'s steps.
//!
//! Futures awaited once (or rarely) are boxed, and hold the session only while
//! they run: every idle stream keeps only its boxed session.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Poll, ready};

use fleetgate_proto::v1::{self as pb, spoke_message};
use futures::Stream;
use tonic::{Status, Streaming};

use super::inner::Inner;
use super::session::{Credential, Flow, Session, Step};
use crate::grpc::convert::invalid;

/// The stream of one spoke connection.
///
/// A hand-written [`Stream`]: between wake-ups it holds only the boxed [`Session`] (an
/// `async_stream` generator kept room for the future of each await and each `yield`'s
/// value for the stream's whole life, 912 bytes in debug builds beside the session).
/// What the stream starts from is boxed into [`open`] and gone once the session is
/// open; the database writes a stream awaits now and then take the session into their
/// own boxed future and hand it back.
pub(super) fn stream(
    inner: Arc<Inner>,
    cluster: String,
    credential: Credential,
    inbound: Streaming<pb::SpokeMessage>,
) -> SpokeStream {
    let start = Box::new(Start {
        inner,
        cluster,
        credential,
        inbound,
    });
    SpokeStream {
        state: State::Opening(Box::pin(open(start))),
    }
}

/// What opening a stream gives: the session (boxed) and the snapshot to send first;
/// `None` if the spoke closed the stream before its Hello.
type Opened = Option<(Box<Session>, Option<pb::HubMessage>)>;

/// What the stream's session does, or will send next.
type Outcome = Result<Option<pb::HubMessage>, Status>;

/// A boxed future of the stream's.
type Boxed<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// See [`stream`].
pub(super) struct SpokeStream {
    state: State,
}

enum State {
    /// Reading the Hello and opening the session.
    Opening(Boxed<Result<Opened, Status>>),
    /// Waiting for the next thing to do ([`Session::poll_step`]).
    Open(Box<Session>),
    /// A database read or write that holds the session until it is done.
    Busy(Boxed<(Box<Session>, Outcome)>),
    /// Ended (its last item sent).
    Ended,
}

impl Stream for SpokeStream {
    type Item = Result<pb::HubMessage, Status>;

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Self::Item>> {
        let state = &mut self.get_mut().state;
        loop {
            let outcome = match state {
                State::Opening(open) => match ready!(open.as_mut().poll(cx)) {
                    Ok(Some((s, first))) => {
                        *state = State::Open(s);
                        Ok(first)
                    }
                    Ok(None) => {
                        *state = State::Ended;
                        return Poll::Ready(None);
                    }
                    Err(status) => Err(status),
                },
                State::Open(s) => match ready!(s.poll_step(cx)) {
                    Step::Stop(why) => {
                        tracing::debug!(cluster = %s.cluster, why, "ending spoke stream");
                        *state = State::Ended;
                        return Poll::Ready(None);
                    }
                    Step::Changed(desired) => {
                        if s.hash_unknown(&desired) {
                            let State::Open(mut s) = std::mem::replace(state, State::Ended) else {
                                unreachable!()
                            };
                            *state = State::Busy(Box::pin(async move {
                                let outcome = match s.recheck_credential().await {
                                    Ok(()) => s.changed(desired),
                                    Err(status) => Err(status),
                                };
                                (s, outcome)
                            }));
                            continue;
                        }
                        s.changed(desired)
                    }
                    Step::Inbound(msg) => match s.inbound(*msg) {
                        Ok(Flow::Continue) => Ok(None),
                        Ok(Flow::End) => {
                            *state = State::Ended;
                            return Poll::Ready(None);
                        }
                        Ok(flow @ (Flow::Record(_) | Flow::Freeze(_))) => {
                            let State::Open(s) = std::mem::replace(state, State::Ended) else {
                                unreachable!()
                            };
                            *state = State::Busy(Box::pin(async move {
                                match flow {
                                    Flow::Record(request) => s.record(request).await,
                                    Flow::Freeze(freeze) => s.record_freeze(freeze).await,
                                    Flow::Continue | Flow::End => {}
                                }
                                (s, Ok(None))
                            }));
                            continue;
                        }
                        Err(status) => Err(status),
                    },
                    Step::Keepalive => Ok(Some(s.keepalive())),
                },
                State::Busy(busy) => {
                    let (s, outcome) = ready!(busy.as_mut().poll(cx));
                    *state = State::Open(s);
                    outcome
                }
                State::Ended => return Poll::Ready(None),
            };
            match outcome {
                Ok(Some(msg)) => return Poll::Ready(Some(Ok(msg))),
                Ok(None) => {}
                // An error is the stream's last item.
                Err(status) => {
                    *state = State::Ended;
                    return Poll::Ready(Some(Err(status)));
                }
            }
        }
    }
}

/// What a stream starts from, until its session is open.
struct Start {
    inner: Arc<Inner>,
    cluster: String,
    credential: Credential,
    inbound: Streaming<pb::SpokeMessage>,
}

/// Reads the Hello and opens the session: the session (boxed) and the snapshot to send
/// first; `None` if the spoke closed the stream before its Hello.
async fn open(start: Box<Start>) -> Result<Opened, Status> {
    let Start {
        inner,
        cluster,
        credential,
        mut inbound,
    } = *start;
    let Some(hello) = read_hello(&inner, &mut inbound).await? else {
        return Ok(None);
    };
    let mut s = Box::new(Session::open(inner, cluster, credential, inbound, hello).await?);
    let first = s.initial()?;
    Ok(Some((s, first)))
}

/// The stream's first message, which must be a Hello; `None` if the spoke
/// closed the stream before sending anything.
async fn read_hello(
    inner: &Inner,
    inbound: &mut Streaming<pb::SpokeMessage>,
) -> Result<Option<pb::Hello>, Status> {
    match tokio::time::timeout(inner.cfg.hello_timeout, inbound.message()).await {
        Err(_) => Err(invalid(
            "hello",
            "the first message must be a Hello (none received in time)",
        )),
        Ok(Err(status)) => Err(status),
        Ok(Ok(None)) => Ok(None),
        Ok(Ok(Some(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Hello(h)),
        }))) => Ok(Some(h)),
        Ok(Ok(Some(_))) => Err(invalid("hello", "the first message must be a Hello")),
    }
}
