//! What the state tests share: a sombus bus with more replicas sharing its state and credential
//! store, and the gateways of such a set.

use crate::harness::{GatewayBuilder, Kind, TestGateway};
use crate::http::sombus::support::Bus;

/// A sombus bus and two more replicas sharing its state and credential store (on `kind`'s Redis).
pub async fn sombus_replicas(kind: Kind, sombus: &str) -> (Bus, Vec<TestGateway>) {
    let bus = Bus::start_on(GatewayBuilder::new(kind), sombus).await;
    let mut replicas = Vec::new();
    for _ in 0..2 {
        replicas.push(
            GatewayBuilder::new(kind)
                .sharing_state_with(&bus.gw)
                .config(&bus.toml)
                .start()
                .await,
        );
    }
    (bus, replicas)
}

pub fn gateways<'a>(bus: &'a Bus, replicas: &'a [TestGateway]) -> Vec<&'a TestGateway> {
    std::iter::once(&bus.gw).chain(replicas).collect()
}
