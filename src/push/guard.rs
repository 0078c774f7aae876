//! Which addresses a push endpoint may be on: not private, loopback, link-local (cloud metadata
//! included), shared (carrier-grade NAT), multicast, broadcast, unspecified or documentation
//! networks, unless the config allows private networks. Checked on each address a name resolves
//! to, at every new connection (so a name that later resolves elsewhere, DNS rebinding, gains
//! nothing), and on an address written in the URL.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether a push endpoint may be reached at `address` without `allow_private_networks`.
pub(super) fn is_public(address: IpAddr) -> bool {
    match address {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(address: Ipv4Addr) -> bool {
    let [a, b, c, _] = address.octets();
    !(address.is_private()
        || address.is_loopback()
        || address.is_link_local()
        || address.is_multicast()
        || address.is_broadcast()
        || address.is_unspecified()
        || address.is_documentation()
        || a == 0
        // Shared address space (carrier-grade NAT), 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments, 192.0.0.0/24; benchmarking, 198.18.0.0/15; reserved, 240/4.
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(address: Ipv6Addr) -> bool {
    let segments = address.segments();
    if let Some(embedded) = embedded_v4(address) {
        return embedded.is_some_and(is_public_v4);
    }
    !(address.is_loopback()
        || address.is_unspecified()
        || address.is_multicast()
        // Unique local (fc00::/7: cloud metadata such as fd00:ec2::254 too) and link-local (fe80::/10).
        || (segments[0] & 0xfe00) == 0xfc00
        || (segments[0] & 0xffc0) == 0xfe80
        // 6to4 (2002::/16) carries an IPv4 address: judged by it.
        || (segments[0] == 0x2002 && !is_public_v4(Ipv4Addr::new(
            (segments[1] >> 8) as u8,
            segments[1] as u8,
            (segments[2] >> 8) as u8,
            segments[2] as u8,
        )))
        // Documentation, 2001:db8::/32.
        || (segments[0] == 0x2001 && segments[1] == 0xdb8))
}

/// The IPv4 address a translated or compatible IPv6 address stands for, judged in its place:
/// `Some(None)` for a form whose IPv4 part cannot be told (refused), `None` when `address`
/// embeds none. IPv4-compatible `::/96`, IPv4-translated `::ffff:0:0/96` and the NAT64 prefixes
/// `64:ff9b::/96` (well-known) and `64:ff9b:1::/48` (local use: only its /96 form, every bit
/// between prefix and IPv4 part zero, is judged; another prefix length could hide any address).
fn embedded_v4(address: Ipv6Addr) -> Option<Option<Ipv4Addr>> {
    let segments = address.segments();
    let [.., a, b, c, d] = address.octets();
    let last = Ipv4Addr::new(a, b, c, d);
    let zero = |range: std::ops::Range<usize>| segments[range].iter().all(|s| *s == 0);
    if zero(0..6) || (zero(0..4) && segments[4] == 0xffff && segments[5] == 0) {
        return Some(Some(last));
    }
    if segments[0] == 0x64 && segments[1] == 0xff9b {
        if zero(2..6) {
            return Some(Some(last));
        }
        if segments[2] == 1 {
            return Some(zero(3..6).then_some(last));
        }
    }
    None
}

/// Whether `url` names its host by an address push may not reach without
/// `allow_private_networks` (or by `localhost`, which is always loopback): a subscription to it
/// could never deliver.
pub(crate) fn names_a_refused_host(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(address)) => !is_public(address.into()),
        Some(url::Host::Ipv6(address)) => !is_public(address.into()),
        Some(url::Host::Domain(name)) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost" || name.ends_with(".localhost")
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for refused in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "::127.0.0.1",
            "::a00:1",
            "::ffff:0:7f00:1",
            "::ffff:0:a9fe:a9fe",
            "64:ff9b:1::7f00:1",
            "64:ff9b:1::a9fe:a9fe",
            "64:ff9b:1:7f00:0:100:808:808",
        ] {
            assert!(!is_public(refused.parse().unwrap()), "{refused}");
        }
        for allowed in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "::808:808",
            "::ffff:0:808:808",
            "64:ff9b:1::808:808",
        ] {
            assert!(is_public(allowed.parse().unwrap()), "{allowed}");
        }
    }
}
