//! The DNS resolver every outbound connection uses: it resolves with the
//! system resolver, then refuses the answer if it names a forbidden address.
//! The addresses it returns are the ones the connector dials, so a name that
//! answers "public" to a first check and "169.254.169.254" to the connect
//! (DNS rebinding) cannot slip through: there is only one answer.

use std::net::SocketAddr;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::destination;
use super::error::DestinationRefused;

/// A [`Resolve`] that drops nothing silently: if any answer is forbidden the
/// whole lookup fails with [`DestinationRefused`], so the operator sees which
/// address a name pointed at.
#[derive(Debug, Clone, Copy)]
pub struct CheckingResolver {
    pub allow_private: bool,
}

impl Resolve for CheckingResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            // Port 0: reqwest replaces it with the URL's port.
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if addrs.is_empty() {
                return Err(format!("{host}: no addresses").into());
            }
            for addr in &addrs {
                if let Err(refusal) = destination::check(addr.ip(), allow_private) {
                    return Err(Box::new(DestinationRefused {
                        host: host.clone(),
                        ip: addr.ip(),
                        refusal,
                    }) as _);
                }
            }
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}
