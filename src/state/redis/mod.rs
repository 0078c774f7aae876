//! The state store on a Redis or Valkey server, shared by every replica of the gateway: the
//! delivery ledger, kept attempt answers and the limiters' counts, each operation one script
//! (one round trip) keyed under a configurable prefix.
//!
//! Keys of one queue's deliveries carry the queue in a hash tag (`{q:NAME}`), so one request's
//! deliveries and its queue's purge generation sit in one slot. Time comes from the gateway's
//! clock: replicas' clocks are expected to agree (NTP) within well under a second.

pub mod config;
mod connection;
pub mod credential_server;
pub mod push_records;
pub mod sample_history;

use crate::core::clock::Clock;
use crate::core::state::ledger::{Standing, UnknownDeliveries};
use crate::core::state::{
    ANSWER_TTL, Admission, DeliveryKey, LimitCheck, NewDelivery, StateResult, StateStore,
    StateUnavailable,
};
use async_trait::async_trait;
use config::RedisStateConfig;
use redis::{FromRedisValue, Script};
use std::sync::Arc;
use std::time::Duration;

pub use connection::{ConnectError, RedisFailure, RedisServer};

/// How long an ended delivery is kept where the policy reads unknown as stale anyway: long
/// enough that no late record of it (a write delayed past its request's deadline) can bring it
/// back, short enough that acknowledged deliveries do not fill the server.
const ENDED_KEPT: Duration = Duration::from_secs(120);

/// The scripts, each loaded once per server and then called by its digest.
struct Scripts {
    ledger: Script,
    limits: Script,
    keep_answer: Script,
}

impl Scripts {
    fn new() -> Self {
        Self {
            ledger: Script::new(include_str!("ledger.lua")),
            limits: Script::new(include_str!("limits.lua")),
            keep_answer: Script::new(include_str!("keep_answer.lua")),
        }
    }
}

/// The state, on a Redis or Valkey server.
pub struct RedisState {
    server: RedisServer,
    ledger_ttl: Duration,
    keep_ended: bool,
    clock: Arc<dyn Clock>,
    scripts: Scripts,
}

impl std::fmt::Debug for RedisState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisState")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// A ledger operation, as the script names it.
#[derive(Clone, Copy)]
enum LedgerOperation {
    Record,
    Standings,
    Begin,
    End,
    Abort,
}

impl LedgerOperation {
    fn name(self) -> &'static str {
        match self {
            Self::Record => "record",
            Self::Standings => "standings",
            Self::Begin => "begin",
            Self::End => "end",
            Self::Abort => "abort",
        }
    }
}

impl RedisState {
    /// A store on the server `config` names; it connects on first use and reconnects by
    /// itself, so the gateway starts (not ready) while the server is down. Deliveries are kept
    /// for `ledger_ttl`; `unknown` decides whether ended ones are kept (as stale) that long.
    pub fn new(
        config: &RedisStateConfig,
        ledger_ttl: Duration,
        unknown: UnknownDeliveries,
        clock: Arc<dyn Clock>,
    ) -> Result<Self, ConnectError> {
        Ok(Self::on(
            RedisServer::connect(config)?,
            ledger_ttl,
            unknown,
            clock,
        ))
    }

    /// The same, on a server already connected to (shared with the other users of it).
    pub fn on(
        server: RedisServer,
        ledger_ttl: Duration,
        unknown: UnknownDeliveries,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            server,
            ledger_ttl,
            keep_ended: unknown == UnknownDeliveries::PassThrough,
            clock,
            scripts: Scripts::new(),
        }
    }

    fn queue_key(&self, queue: &str, what: &str) -> String {
        self.server.key(&format!("{{q:{queue}}}:{what}"))
    }

    fn key(&self, kind: &str, key: &str) -> String {
        self.server.key(&format!("{kind}:{key}"))
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().timestamp_millis()
    }

    /// Runs `invocation` within the timeout; any failure is the store being unavailable.
    async fn run<T: FromRedisValue>(
        &self,
        invocation: redis::ScriptInvocation<'_>,
    ) -> StateResult<T> {
        self.server
            .invoke(invocation)
            .await
            .map_err(|failure| StateUnavailable(failure.0))
    }

    /// Runs a plain command within the timeout.
    async fn command<T: FromRedisValue>(&self, command: &redis::Cmd) -> StateResult<T> {
        self.server
            .query(command)
            .await
            .map_err(|failure| StateUnavailable(failure.0))
    }

    /// One ledger operation over a request's deliveries (all of one queue: one slot).
    async fn ledger(
        &self,
        operation: LedgerOperation,
        deliveries: &[DeliveryKey<'_>],
        receive_counts: Option<&[u32]>,
    ) -> StateResult<Vec<Standing>> {
        let Some(first) = deliveries.first() else {
            return Ok(Vec::new());
        };
        if deliveries
            .iter()
            .any(|delivery| delivery.queue != first.queue)
        {
            // The core asks per queue; a mixed call is split so each stays in one slot.
            let mut answers = Vec::with_capacity(deliveries.len());
            for (index, delivery) in deliveries.iter().enumerate() {
                let counts = receive_counts.map(|counts| &counts[index..=index]);
                answers.extend(Box::pin(self.ledger(operation, &[*delivery], counts)).await?);
            }
            return Ok(answers);
        }
        let mut invocation = self.scripts.ledger.prepare_invoke();
        invocation
            .key(self.queue_key(first.queue, "generation"))
            .arg(operation.name())
            .arg(millis(self.ledger_ttl))
            .arg(millis(ENDED_KEPT.min(self.ledger_ttl)))
            .arg(if self.keep_ended { "1" } else { "0" });
        for (index, delivery) in deliveries.iter().enumerate() {
            invocation
                .key(self.queue_key(delivery.queue, &format!("d:{}", delivery.message_id)))
                .arg(delivery.delivery_id.to_string());
            if let Some(counts) = receive_counts {
                invocation.arg(counts[index]);
            }
        }
        let codes: Vec<u8> = self.run(invocation).await?;
        Ok(codes
            .into_iter()
            .map(|code| match code {
                1 => Standing::Current,
                2 => Standing::Stale,
                _ => Standing::Unknown,
            })
            .collect())
    }

    /// `limits` in one script, in order; the first refusal ends the check. Every key of one
    /// subject carries it as a hash tag (`{l:SUBJECT}`), so one subject's limits share a slot.
    async fn admit_in_one_call(&self, limits: &[LimitCheck<'_>]) -> StateResult<Vec<Admission>> {
        const DAY_MS: i64 = 24 * 60 * 60 * 1000;
        if limits.is_empty() {
            return Ok(Vec::new());
        }
        let now = self.clock.now();
        let now_ms = now.timestamp_millis();
        let day = now_ms.div_euclid(DAY_MS);
        let until_tomorrow = (day + 1) * DAY_MS - now_ms;
        let mut invocation = self.scripts.limits.prepare_invoke();
        invocation.arg(now.timestamp_micros());
        for limit in limits {
            let subject = limit.subject();
            match *limit {
                LimitCheck::Rate { allowance, .. } => {
                    let interval_us = 1_000_000 / i64::from(allowance.per_second.get());
                    invocation
                        .key(self.limit_key(
                            subject,
                            &format!("rate:{}/{}", allowance.per_second, allowance.burst),
                        ))
                        .arg("rate")
                        .arg(interval_us.max(1))
                        .arg(allowance.burst.get())
                        .arg(0);
                }
                LimitCheck::Window {
                    amount, per_minute, ..
                } => {
                    invocation
                        .key(self.limit_key(subject, "window"))
                        .arg("window")
                        .arg(amount)
                        .arg(per_minute)
                        .arg(0);
                }
                LimitCheck::Daily {
                    amount, per_day, ..
                } => {
                    invocation
                        .key(self.limit_key(subject, &format!("day:{day}")))
                        .arg("daily")
                        .arg(amount)
                        .arg(per_day)
                        .arg(until_tomorrow);
                }
            }
        }
        let answers: Vec<i64> = self.run(invocation).await?;
        Ok(answers.into_iter().map(Self::admission).collect())
    }

    fn limit_key(&self, subject: &str, what: &str) -> String {
        self.server.key(&format!("{{l:{subject}}}:{what}"))
    }

    /// A limiter script's answer: -1 admitted, else the wait in microseconds.
    fn admission(answer_us: i64) -> Admission {
        match u64::try_from(answer_us) {
            Err(_) => Ok(()),
            Ok(wait_us) => Err(Duration::from_micros(wait_us).max(Duration::from_millis(1))),
        }
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[async_trait]
impl StateStore for RedisState {
    async fn record_deliveries(&self, deliveries: &[NewDelivery<'_>]) -> StateResult<()> {
        let keys: Vec<DeliveryKey<'_>> = deliveries.iter().map(|delivery| delivery.key).collect();
        let counts: Vec<u32> = deliveries
            .iter()
            .map(|delivery| delivery.receive_count)
            .collect();
        self.ledger(LedgerOperation::Record, &keys, Some(&counts))
            .await
            .map(drop)
    }

    async fn standings(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>> {
        self.ledger(LedgerOperation::Standings, deliveries, None)
            .await
    }

    async fn begin_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<Vec<Standing>> {
        self.ledger(LedgerOperation::Begin, deliveries, None).await
    }

    async fn end_deliveries(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()> {
        // `begin_acks` already keeps each claim as an ended delivery is kept (answering stale,
        // for the ended time), so an acknowledgement is one round trip. Where unknown
        // deliveries act on the backend (`pass_through`), the ones the ledger did not know
        // are written down as ended, so that their handles answer stale from now on.
        if !self.keep_ended {
            return Ok(());
        }
        self.ledger(LedgerOperation::End, deliveries, None)
            .await
            .map(drop)
    }

    async fn abort_acks(&self, deliveries: &[DeliveryKey<'_>]) -> StateResult<()> {
        self.ledger(LedgerOperation::Abort, deliveries, None)
            .await
            .map(drop)
    }

    async fn end_queue(&self, queue: &str) -> StateResult<()> {
        let mut command = redis::cmd("INCR");
        command.arg(self.queue_key(queue, "generation"));
        self.command::<i64>(&command).await.map(drop)
    }

    async fn keep_answer(&self, key: &str, answer: Vec<u8>) -> StateResult<()> {
        let now = self.now_ms();
        let expires = now.saturating_add(i64::try_from(millis(ANSWER_TTL)).unwrap_or(i64::MAX));
        let mut value = format!("{expires}:").into_bytes();
        value.extend_from_slice(&answer);
        let mut invocation = self.scripts.keep_answer.prepare_invoke();
        invocation
            .key(self.key("answer", key))
            .arg(now)
            .arg(value)
            .arg(millis(ANSWER_TTL + Duration::from_secs(60)));
        self.run::<i64>(invocation).await.map(drop)
    }

    async fn answer(&self, key: &str) -> StateResult<Option<Vec<u8>>> {
        let mut command = redis::cmd("GET");
        command.arg(self.key("answer", key));
        let Some(kept) = self.command::<Option<Vec<u8>>>(&command).await? else {
            return Ok(None);
        };
        let Some(colon) = kept.iter().position(|byte| *byte == b':') else {
            return Ok(None);
        };
        let expires: Option<i64> = std::str::from_utf8(&kept[..colon])
            .ok()
            .and_then(|text| text.parse().ok());
        Ok(expires
            .filter(|expires| self.now_ms() < *expires)
            .map(|_| kept[colon + 1..].to_vec()))
    }

    async fn forget_answer(&self, key: &str) -> StateResult<()> {
        let mut command = redis::cmd("DEL");
        command.arg(self.key("answer", key));
        self.command::<i64>(&command).await.map(drop)
    }

    async fn admit(&self, limits: &[LimitCheck<'_>]) -> StateResult<Vec<Admission>> {
        if !self.server.clustered() {
            return self.admit_in_one_call(limits).await;
        }
        // A cluster runs a script on one slot: the limits of one subject (its hash tag) go in
        // one call, the subjects one after the other, stopping where one refuses.
        let mut answers = Vec::with_capacity(limits.len());
        for group in limits.chunk_by(|a, b| a.subject() == b.subject()) {
            let admitted = self.admit_in_one_call(group).await?;
            let refused = admitted.iter().any(Result::is_err);
            answers.extend(admitted);
            if refused {
                break;
            }
        }
        Ok(answers)
    }

    async fn ping(&self) -> StateResult<()> {
        self.command::<String>(&redis::cmd("PING")).await.map(drop)
    }

    fn calls(&self) -> Option<u64> {
        Some(self.server.calls())
    }
}
