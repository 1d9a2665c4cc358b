//! Which IP addresses an outbound call may connect to. Pure: the resolver
//! and the URL check both ask [`check`], so an IP literal in a URL and a DNS
//! answer are judged by the same rules.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused (the kinds of destination an operator can allow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 127.0.0.0/8, ::1: the hub itself.
    Loopback,
    /// RFC 1918, CGNAT 100.64.0.0/10, unique-local fc00::/7: in-house networks.
    Private,
    /// 169.254.0.0/16, fe80::/10: cloud metadata services live here
    /// (169.254.169.254). Never allowed, not even with `allow_private`.
    LinkLocal,
    /// Unspecified, multicast, broadcast, documentation, benchmarking and
    /// reserved ranges: never a legitimate receiver.
    Special,
}

impl Refusal {
    /// A short human-readable name of the range.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Loopback => "loopback",
            Self::Private => "private network",
            Self::LinkLocal => "link-local (cloud metadata)",
            Self::Special => "unspecified, multicast or reserved",
        }
    }

    /// What an operator can do about it: loopback and private ranges can be allowed;
    /// link-local and special ranges never are, so no flag is suggested for them.
    pub fn remedy(self) -> &'static str {
        match self {
            Self::Loopback | Self::Private => {
                "allow it with --egress-allow-private or the feature's allow flag"
            }
            Self::LinkLocal | Self::Special => {
                "never allowed, not even with --egress-allow-private"
            }
        }
    }
}

/// `Ok` if `ip` may be connected to; `allow_private` lets loopback and
/// private ranges through (receivers inside the organisation, tests).
pub fn check(ip: IpAddr, allow_private: bool) -> Result<(), Refusal> {
    match classify(ip) {
        None => Ok(()),
        Some(Refusal::Loopback | Refusal::Private) if allow_private => Ok(()),
        Some(refusal) => Err(refusal),
    }
}

/// The refused range `ip` is in, `None` for a public unicast address.
pub fn classify(ip: IpAddr) -> Option<Refusal> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<Refusal> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some(Refusal::Loopback)
    } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Some(Refusal::Private)
    } else if ip.is_link_local() {
        Some(Refusal::LinkLocal)
    } else if a == 0                                   // "this network", 0.0.0.0
        || ip.is_multicast()                           // 224/4
        || a >= 240                                    // reserved 240/4 and broadcast
        || ip.is_documentation()                       // 192.0.2/24, 198.51.100/24, 203.0.113/24
        || (a == 198 && (b & 0xfe) == 18)              // benchmarking 198.18/15
        || (a == 192 && b == 0 && c == 0)
    // IETF protocol assignments 192.0.0/24
    {
        Some(Refusal::Special)
    } else {
        None
    }
}

fn classify_v6(ip: Ipv6Addr) -> Option<Refusal> {
    // An IPv4 address written as IPv6 (::ffff:a.b.c.d, ::a.b.c.d, NAT64
    // 64:ff9b::a.b.c.d) reaches the IPv4 host: judge that one.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return classify_v4(v4);
    }
    let seg = ip.segments();
    if seg[..6] == [0, 0, 0, 0, 0, 0] && !ip.is_unspecified() && !ip.is_loopback() {
        return classify_v4(Ipv4Addr::new(
            (seg[6] >> 8) as u8,
            seg[6] as u8,
            (seg[7] >> 8) as u8,
            seg[7] as u8,
        ));
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return classify_v4(Ipv4Addr::new(
            (seg[6] >> 8) as u8,
            seg[6] as u8,
            (seg[7] >> 8) as u8,
            seg[7] as u8,
        ));
    }
    if ip.is_loopback() {
        Some(Refusal::Loopback)
    } else if ip.is_unique_local() || (seg[0] & 0xffc0) == 0xfec0 {
        // fc00::/7, and the deprecated site-local fec0::/10.
        Some(Refusal::Private)
    } else if ip.is_unicast_link_local() {
        Some(Refusal::LinkLocal)
    } else if ip.is_unspecified() || ip.is_multicast() || (seg[0] == 0x2001 && seg[1] == 0xdb8) {
        Some(Refusal::Special)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Option<Refusal> {
        classify(s.parse().unwrap())
    }

    #[test]
    fn ranges() {
        for (ip, want) in [
            ("127.0.0.1", Some(Refusal::Loopback)),
            ("127.255.1.2", Some(Refusal::Loopback)),
            ("::1", Some(Refusal::Loopback)),
            ("10.1.2.3", Some(Refusal::Private)),
            ("172.16.0.1", Some(Refusal::Private)),
            ("172.31.255.255", Some(Refusal::Private)),
            ("192.168.1.1", Some(Refusal::Private)),
            ("100.64.0.1", Some(Refusal::Private)),
            ("100.127.255.255", Some(Refusal::Private)),
            ("fd00::1", Some(Refusal::Private)),
            ("fc00::1", Some(Refusal::Private)),
            ("169.254.169.254", Some(Refusal::LinkLocal)),
            ("fe80::1", Some(Refusal::LinkLocal)),
            ("0.0.0.0", Some(Refusal::Special)),
            ("::", Some(Refusal::Special)),
            ("224.0.0.1", Some(Refusal::Special)),
            ("255.255.255.255", Some(Refusal::Special)),
            ("ff02::1", Some(Refusal::Special)),
            ("::ffff:127.0.0.1", Some(Refusal::Loopback)),
            ("::ffff:169.254.169.254", Some(Refusal::LinkLocal)),
            ("::10.0.0.1", Some(Refusal::Private)),
            ("64:ff9b::a9fe:a9fe", Some(Refusal::LinkLocal)),
            ("8.8.8.8", None),
            ("100.128.0.1", None),
            ("172.32.0.1", None),
            ("2606:4700::1111", None),
            ("::ffff:8.8.8.8", None),
        ] {
            assert_eq!(class(ip), want, "{ip}");
        }
    }

    #[test]
    fn allow_private_never_opens_metadata_or_special() {
        let ok = |s: &str, allow| check(s.parse().unwrap(), allow).is_ok();
        assert!(!ok("127.0.0.1", false));
        assert!(ok("127.0.0.1", true));
        assert!(ok("10.0.0.1", true));
        assert!(!ok("169.254.169.254", true));
        assert!(!ok("0.0.0.0", true));
        assert!(!ok("ff02::1", true));
        assert!(ok("8.8.8.8", false));
    }
}
