//! Open connections counted per client address, so that one address (an attacker's, or a
//! misbehaving client's) can hold at most its share of the connection slots, and a few addresses
//! holding every slot make room for another: when no slot is free, a newcomer evicts the oldest
//! idle connection of the address holding the most, if that address holds more than the
//! newcomer's. IPv6 addresses count per /64, the block one subscriber gets; IPv4-mapped IPv6
//! addresses as IPv4.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// One open connection as the table sees it: how many requests it has in flight, and the token
/// that tells it to close because a newcomer needs its slot.
#[derive(Debug, Default)]
pub(crate) struct Tenure {
    in_flight: AtomicU32,
    evicted: CancellationToken,
}

impl Tenure {
    /// A request started on the connection: it is no longer idle.
    pub(crate) fn request_started(&self) {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
    }

    /// A request on the connection ended.
    pub(crate) fn request_ended(&self) {
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// Cancelled when the connection should close (if still idle) to make room for another
    /// client's.
    pub(crate) fn evicted(&self) -> &CancellationToken {
        &self.evicted
    }

    fn idle(&self) -> bool {
        self.in_flight.load(Ordering::Relaxed) == 0 && !self.evicted.is_cancelled()
    }
}

/// The open connections of every client address, each at most `max`; each address's oldest
/// first.
#[derive(Debug)]
pub(super) struct PerAddress {
    max: usize,
    open: Mutex<HashMap<IpAddr, Vec<Arc<Tenure>>>>,
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
        let held = open.entry(address).or_default();
        if held.len() >= self.max {
            return None;
        }
        let tenure = Arc::new(Tenure::default());
        held.push(Arc::clone(&tenure));
        Some(AddressSlot {
            table: Arc::clone(self),
            address,
            tenure,
        })
    }

    /// Makes room for `newcomer` (already entered) when every slot is taken: tells the oldest
    /// idle connection of the address holding the most to close (the next address down when
    /// none of its connections is idle), among the addresses holding more connections than the
    /// newcomer's will. `false` when there is none to evict.
    pub(super) fn evict_for(&self, newcomer: &AddressSlot) -> bool {
        let open = self.lock();
        let newcomers = open.get(&newcomer.address).map_or(0, Vec::len);
        let mut others: Vec<&Vec<Arc<Tenure>>> = open
            .iter()
            .filter(|(address, _)| **address != newcomer.address)
            .map(|(_, held)| held)
            // Evicting from an address that holds no more than the newcomer's would only move
            // the imbalance: the shares even out instead.
            .filter(|held| held.len() > newcomers)
            .collect();
        others.sort_by_key(|held| std::cmp::Reverse(held.len()));
        let victim = others
            .into_iter()
            .find_map(|held| held.iter().find(|tenure| tenure.idle()));
        match victim {
            Some(victim) => {
                victim.evicted.cancel();
                true
            }
            None => false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Vec<Arc<Tenure>>>> {
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
    tenure: Arc<Tenure>,
}

impl AddressSlot {
    /// What the connection in this slot reports to the table.
    pub(super) fn tenure(&self) -> Arc<Tenure> {
        Arc::clone(&self.tenure)
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.table.lock();
        if let Some(held) = open.get_mut(&self.address) {
            held.retain(|tenure| !Arc::ptr_eq(tenure, &self.tenure));
            if held.is_empty() {
                open.remove(&self.address);
            }
        }
    }
}

/// The address a connection of `peer` counts under.
pub(super) fn counted_as(peer: IpAddr) -> IpAddr {
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

    #[test]
    fn a_newcomer_evicts_the_oldest_idle_connection_of_the_address_holding_most() {
        let table = PerAddress::new(10);
        let first = table.enter(ip("192.0.2.1")).unwrap();
        let second = table.enter(ip("192.0.2.1")).unwrap();
        let _third = table.enter(ip("192.0.2.1")).unwrap();
        let _other = table.enter(ip("192.0.2.2")).unwrap();
        first.tenure().request_started();
        let newcomer = table.enter(ip("192.0.2.3")).unwrap();
        assert!(table.evict_for(&newcomer));
        assert!(
            !first.tenure().evicted().is_cancelled(),
            "a connection with a request in flight stays"
        );
        assert!(
            second.tenure().evicted().is_cancelled(),
            "the oldest idle one of the address holding most goes"
        );
        let _level = table.enter(ip("192.0.2.2")).unwrap();
        let _level_too = table.enter(ip("192.0.2.2")).unwrap();
        let crowd = table.enter(ip("192.0.2.2")).unwrap();
        assert!(
            !table.evict_for(&crowd),
            "no other address holds more than the newcomer's (four)"
        );
    }

    #[test]
    fn an_address_keeping_every_connection_busy_leaves_the_next_one_down_to_evict() {
        let table = PerAddress::new(10);
        let busy: Vec<AddressSlot> = (0..3)
            .map(|_| table.enter(ip("192.0.2.1")).unwrap())
            .collect();
        for slot in &busy {
            slot.tenure().request_started();
        }
        let idle = table.enter(ip("192.0.2.2")).unwrap();
        let idle_too = table.enter(ip("192.0.2.2")).unwrap();
        let newcomer = table.enter(ip("192.0.2.3")).unwrap();
        newcomer.tenure().request_started();
        assert!(table.evict_for(&newcomer));
        assert!(
            busy.iter()
                .all(|slot| !slot.tenure().evicted().is_cancelled())
        );
        assert!(
            idle.tenure().evicted().is_cancelled(),
            "the oldest idle connection of the next address down goes"
        );
        let another = table.enter(ip("192.0.2.4")).unwrap();
        assert!(table.evict_for(&another));
        assert!(idle_too.tenure().evicted().is_cancelled());
        let last = table.enter(ip("192.0.2.5")).unwrap();
        assert!(
            !table.evict_for(&last),
            "busy connections, and those already told to close, are not idle"
        );
    }
}
