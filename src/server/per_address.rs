//! Open connections counted per client address, so that one address (an attacker's, or a
//! misbehaving client's) can hold at most its share of the connection slots. IPv6 addresses
//! count per /64, the block one subscriber gets; IPv4-mapped IPv6 addresses as IPv4.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The open connections of every client address, each at most `max`.
#[derive(Debug)]
pub(super) struct PerAddress {
    max: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl PerAddress {
    /// At most `max` connections per address.
    pub(super) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            open: Mutex::default(),
        })
    }

    /// A slot for one more connection of `peer`, or `None` when its address holds `max`.
    pub(super) fn enter(self: &Arc<Self>, peer: IpAddr) -> Option<AddressSlot> {
        let address = counted_as(peer);
        let mut open = self.lock();
        let count = open.entry(address).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            table: Arc::clone(self),
            address,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, usize>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One connection's place in its address's count; given back when dropped.
#[derive(Debug)]
pub(super) struct AddressSlot {
    table: Arc<PerAddress>,
    address: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.table.lock();
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

/// The address a connection of `peer` counts under.
fn counted_as(peer: IpAddr) -> IpAddr {
    match peer {
        IpAddr::V4(_) => peer,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let segments = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(
                    segments[0],
                    segments[1],
                    segments[2],
                    segments[3],
                    0,
                    0,
                    0,
                    0,
                ))
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn an_address_holds_at_most_its_share_and_gets_it_back_as_connections_close() {
        let table = PerAddress::new(2);
        let first = table.enter(ip("192.0.2.1")).unwrap();
        let _second = table.enter(ip("192.0.2.1")).unwrap();
        assert!(table.enter(ip("192.0.2.1")).is_none(), "its share is taken");
        assert!(
            table.enter(ip("192.0.2.2")).is_some(),
            "others are not held back"
        );
        drop(first);
        assert!(
            table.enter(ip("192.0.2.1")).is_some(),
            "a closed one frees a place"
        );
    }

    #[test]
    fn ipv6_counts_per_64_and_mapped_ipv4_as_ipv4() {
        let table = PerAddress::new(1);
        let _one = table.enter(ip("2001:db8:1:2::1")).unwrap();
        assert!(
            table.enter(ip("2001:db8:1:2:ffff::9")).is_none(),
            "same /64"
        );
        assert!(table.enter(ip("2001:db8:1:3::1")).is_some(), "another /64");
        let _v4 = table.enter(ip("192.0.2.7")).unwrap();
        assert!(
            table.enter(ip("::ffff:192.0.2.7")).is_none(),
            "the same IPv4 address"
        );
        assert!(table.lock().len() <= 3);
    }
}
