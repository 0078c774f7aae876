//! The basaltic metrics history on the shared Redis or Valkey server
//! ([`crate::core::metrics::sample_history::SampleHistory`]): replicas sample one at a time, the history
//! is the same on every replica and outlives them, and it is bounded.
//!
//! Keys, under the server's prefix (`P`):
//!
//! - `P{bm}:lease`: the sampling lease, the holder's id (random per process), `SET NX PX` for
//!   about three intervals and renewed by its holder each interval; a replica that dies stops
//!   renewing it, and another takes it once it expires. `P{bm}:known`: the queue ids replicas
//!   announced (a sorted set by when), so the sampler learns queues made on other replicas before
//!   it reads their aliases back (kept 15 minutes, at most 20,000). `P{bm}:queues`: the queues
//!   that have a history, by their last sample.
//! - `P{bm}:q:<queue id>:samples`: a queue's samples, a sorted set by time (member
//!   `at:visible:in_flight:delayed:age:repeated:sends:receives`, or `at:-` for a gap; members
//!   written before sends and receives were counted end at `repeated` and read as 0 of each);
//!   `P{bm}:q:<queue id>:repeated`, `…:sends` and `…:receives` what replicas counted in since its
//!   last sample. Every key of the history
//!   shares one hash tag, so a round's pipeline (all queues at once) sits in one slot of a
//!   cluster: the history, at most [`SAMPLE_BUDGET`] samples, lives on one node.
//!
//! Bounds: a queue keeps at most a day's samples (at most
//! [`MAX_SAMPLES`](crate::core::metrics::sample_history::MAX_SAMPLES)), cut by time and by count at each
//! append, and its keys expire a day after its last sample; all queues together keep at most
//! [`SAMPLE_BUDGET`] samples (the longest give up their oldest first, as in memory: about 100
//! bytes each on the server, 100 MB in all); at most [`MAX_QUEUES`] queues have a history (a round
//! samples the first 10,000 queue ids, and past 10,000 histories the ones sampled longest ago
//! go, gone queues first). A queue the sampler no longer finds loses its history at once.
//!
//! Cost: each replica makes one pipeline an interval (its activity counts, its new queue ids,
//! the lease), never a call per receive; the sampler one more, one script per queue. A read is one
//! command.

use super::{RedisFailure, RedisServer};
use crate::core::clock::Clock;
use crate::core::metrics::sample_history::{
    Activity, Counts, KEPT_FOR, SAMPLE_BUDGET, Sample, SampleHistory, Turn, TurnAnswer, kept,
    most_each,
};
use crate::core::model::QueueStats;
use crate::core::registry::ALIAS_REFRESH;
use crate::core::state::{StateResult, StateUnavailable};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use redis::Script;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A queue's counters of what replicas counted since its last sample, in the order the append
/// script writes them into the sample.
const COUNTERS: [&str; 3] = ["repeated", "sends", "receives"];

/// The most queues with a history on the server.
pub const MAX_QUEUES: usize = 10_000;
/// How long an announced queue id is kept: past two alias read-backs every replica knows it.
const ANNOUNCED_FOR: Duration = Duration::from_secs(2 * ALIAS_REFRESH.as_secs() + 300);
/// The most announced ids kept.
const MAX_ANNOUNCED: usize = 2 * MAX_QUEUES;

/// Deletes the lease if the caller holds it (nobody else's).
const RELEASE: &str = r"
-- KEYS[1]: the lease; ARGV[1]: the holder giving it up.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

/// Takes or renews the lease; for its holder, trims the announcements and reads those since
/// ARGV[3] (all of them when the lease was just taken).
const LEASE: &str = r"
-- KEYS[1]: the lease; KEYS[2]: the announced queue ids, by when.
-- ARGV: holder, lease (ms), read since (ms or -inf), trim before (ms), keep at most (negative rank).
local took = redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])
if not took then
  if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return {0, {}}
  end
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[4])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, ARGV[5])
local since = ARGV[3]
if took then
  since = '-inf'
end
return {1, redis.call('ZRANGEBYSCORE', KEYS[2], since, '+inf')}
";

/// Appends one queue's sample (with the activity counted in since its last one), unless
/// it has one less than the least gap before; then holds it to its bounds. Answers how many
/// samples it keeps, or -1 when the sample was refused.
const APPEND: &str = r"
-- KEYS[1]: the queue's samples; KEYS[2], KEYS[3], KEYS[4]: its repeated receives, sends and
-- receives since its last sample.
-- ARGV: at (ms), counts ('' for a gap), trim before (ms), keep at most, expire after (ms), least gap (ms).
local at = tonumber(ARGV[1])
local newest = redis.call('ZREVRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if newest[2] and at < tonumber(newest[2]) + tonumber(ARGV[6]) then
  return -1
end
local member
if ARGV[2] == '' then
  member = ARGV[1] .. ':-'
else
  local counted = {}
  for index = 2, 4 do
    counted[index - 1] = redis.call('GET', KEYS[index]) or '0'
    redis.call('DEL', KEYS[index])
  end
  member = ARGV[1] .. ':' .. ARGV[2] .. ':' .. table.concat(counted, ':')
end
redis.call('ZADD', KEYS[1], ARGV[1], member)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3])
local most = tonumber(ARGV[4])
local held = redis.call('ZCARD', KEYS[1])
if held > most then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, held - most - 1)
  held = most
end
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return held
";

/// What this replica remembers between its calls.
#[derive(Debug, Default)]
struct Local {
    /// When this replica last read the announcements as the sampler (ms, by its clock).
    read_at: Option<i64>,
    /// The queue ids this replica announced (and still knows).
    announced: HashSet<String>,
    /// The queues of this sampler's previous round, with the samples each keeps.
    lengths: HashMap<String, usize>,
}

/// The history on the shared server.
pub struct RedisSampleHistory {
    server: RedisServer,
    interval: Duration,
    clock: Arc<dyn Clock>,
    lease: Script,
    release: Script,
    append: Script,
    local: Mutex<Local>,
}

impl std::fmt::Debug for RedisSampleHistory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSampleHistory")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn unavailable(failure: RedisFailure) -> StateUnavailable {
    StateUnavailable(failure.0)
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl RedisSampleHistory {
    /// A history on `server` (shared with the other users of it), sampled every `interval`.
    pub fn new(server: RedisServer, interval: Duration, clock: Arc<dyn Clock>) -> Self {
        Self {
            server,
            interval,
            clock,
            lease: Script::new(LEASE),
            release: Script::new(RELEASE),
            append: Script::new(APPEND),
            local: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Local> {
        self.local
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn shared_key(&self, what: &str) -> String {
        self.server.key(&format!("{{bm}}:{what}"))
    }

    fn queue_key(&self, queue_id: &str, what: &str) -> String {
        self.server.key(&format!("{{bm}}:q:{queue_id}:{what}"))
    }

    /// Drops the histories of `ids` (one round trip).
    async fn forget(&self, ids: &[String]) -> StateResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.del(self.queue_key(id, "samples")).ignore();
            for counter in COUNTERS {
                pipe.del(self.queue_key(id, counter)).ignore();
            }
        }
        pipe.zrem(self.shared_key("queues"), ids).ignore();
        self.server.pipeline::<()>(&pipe).await.map_err(unavailable)
    }
}

/// A sample's counts as the append script takes them: `visible:in_flight:delayed:age`.
fn encode(stats: &QueueStats) -> String {
    let age = stats
        .oldest_age_seconds
        .map(|age| age.to_string())
        .unwrap_or_default();
    format!(
        "{}:{}:{}:{age}",
        stats.visible, stats.in_flight, stats.delayed
    )
}

/// A sample as the append script wrote it; `None` for anything else.
fn decode(member: &str) -> Option<Sample> {
    let mut fields = member.split(':');
    let at_millis: i64 = fields.next()?.parse().ok()?;
    let first = fields.next()?;
    if first == "-" {
        return Some(Sample {
            at_millis,
            counts: None,
        });
    }
    let visible = first.parse().ok()?;
    let in_flight = fields.next()?.parse().ok()?;
    let delayed = fields.next()?.parse().ok()?;
    let age = fields.next()?;
    let oldest_age_seconds = if age.is_empty() {
        None
    } else {
        Some(age.parse().ok()?)
    };
    let repeated: u64 = fields.next()?.parse().ok()?;
    // Written before sends and receives were counted: none of either.
    let sends: u64 = fields.next().map_or(Some(0), |field| field.parse().ok())?;
    let receives: u64 = fields.next().map_or(Some(0), |field| field.parse().ok())?;
    if fields.next().is_some() {
        return None;
    }
    let stats = QueueStats {
        visible,
        in_flight,
        delayed,
        oldest_age_seconds,
    };
    Some(Sample {
        at_millis,
        counts: Some(Counts::new(
            &stats,
            Activity {
                sends,
                receives,
                repeated,
            },
        )),
    })
}

#[async_trait]
impl SampleHistory for RedisSampleHistory {
    async fn turn(&self, turn: Turn<'_>) -> StateResult<TurnAnswer> {
        let now = self.clock.now().timestamp_millis();
        let (since, new) = {
            let local = self.lock();
            let new: Vec<&String> = turn
                .known
                .iter()
                .filter(|id| !local.announced.contains(*id))
                .collect();
            // A margin of a lease for announcers whose clocks run behind this one.
            let since = local.read_at.map_or_else(
                || "-inf".to_owned(),
                |at| (at - millis(turn.lease)).to_string(),
            );
            (since, new)
        };
        let mut pipe = redis::pipe();
        for (id, activity) in turn.activity {
            let counted = [activity.repeated, activity.sends, activity.receives];
            for (counter, count) in COUNTERS.iter().zip(counted) {
                if count > 0 {
                    let key = self.queue_key(id, counter);
                    pipe.incr(&key, count).ignore();
                    pipe.pexpire(&key, millis(KEPT_FOR)).ignore();
                }
            }
        }
        if !new.is_empty() {
            let members: Vec<(i64, &String)> = new.iter().map(|id| (now, *id)).collect();
            pipe.zadd_multiple(self.shared_key("known"), &members)
                .ignore();
        }
        pipe.load_script(&self.lease).ignore();
        let mut lease = self.lease.prepare_invoke();
        lease
            .key(self.shared_key("lease"))
            .key(self.shared_key("known"))
            .arg(turn.holder)
            .arg(millis(turn.lease).max(1))
            .arg(since)
            .arg(now - millis(ANNOUNCED_FOR))
            .arg(-(i64::try_from(MAX_ANNOUNCED).unwrap_or(i64::MAX) + 1));
        pipe.invoke_script(&lease);
        let ((held, announced),): ((i64, Vec<String>),) =
            self.server.pipeline(&pipe).await.map_err(unavailable)?;
        let sampler = held == 1;
        let mut local = self.lock();
        let known: HashSet<&String> = turn.known.iter().collect();
        local.announced.retain(|id| known.contains(id));
        local.announced.extend(new.into_iter().cloned());
        local.read_at = sampler.then_some(now);
        if !sampler {
            // Another replica samples now: this one's last round is not the last any more.
            local.lengths.clear();
        }
        Ok(TurnAnswer {
            sampler,
            announced: if sampler { announced } else { Vec::new() },
        })
    }

    async fn release(&self, holder: &str) -> StateResult<()> {
        let mut release = self.release.prepare_invoke();
        release.key(self.shared_key("lease")).arg(holder);
        let _released: i64 = self.server.invoke(release).await.map_err(unavailable)?;
        Ok(())
    }

    async fn append(
        &self,
        at: DateTime<Utc>,
        mut round: Vec<(String, Option<QueueStats>)>,
    ) -> StateResult<()> {
        round.sort_by(|a, b| a.0.cmp(&b.0));
        round.dedup_by(|a, b| a.0 == b.0);
        if round.len() > MAX_QUEUES {
            tracing::debug!(
                queues = round.len(),
                kept = MAX_QUEUES,
                "basaltic metrics: only the first queues by id keep a history"
            );
            round.truncate(MAX_QUEUES);
        }
        let at_ms = at.timestamp_millis();
        let (most, gone) = {
            let local = self.lock();
            let lengths: Vec<usize> = round
                .iter()
                .map(|(id, _)| local.lengths.get(id).copied().unwrap_or(0) + 1)
                .collect();
            let in_round: HashSet<&String> = round.iter().map(|(id, _)| id).collect();
            let gone: Vec<String> = local
                .lengths
                .keys()
                .filter(|id| !in_round.contains(id))
                .cloned()
                .collect();
            let most = most_each(lengths, SAMPLE_BUDGET)
                .map_or(kept(self.interval), |most| most.min(kept(self.interval)))
                .max(1);
            (most, gone)
        };
        let mut pipe = redis::pipe();
        pipe.load_script(&self.append).ignore();
        for (id, stats) in &round {
            let mut append = self.append.prepare_invoke();
            append
                .key(self.queue_key(id, "samples"))
                .key(self.queue_key(id, COUNTERS[0]))
                .key(self.queue_key(id, COUNTERS[1]))
                .key(self.queue_key(id, COUNTERS[2]))
                .arg(at_ms)
                .arg(stats.as_ref().map(encode).unwrap_or_default())
                .arg(at_ms - millis(KEPT_FOR))
                .arg(most)
                .arg(millis(KEPT_FOR))
                .arg(millis(self.interval / 2));
            pipe.invoke_script(&append);
        }
        let index = self.shared_key("queues");
        if !round.is_empty() {
            let members: Vec<(i64, &String)> = round.iter().map(|(id, _)| (at_ms, id)).collect();
            pipe.zadd_multiple(&index, &members).ignore();
        }
        for id in &gone {
            pipe.del(self.queue_key(id, "samples")).ignore();
            for counter in COUNTERS {
                pipe.del(self.queue_key(id, counter)).ignore();
            }
        }
        if !gone.is_empty() {
            pipe.zrem(&index, &gone).ignore();
        }
        pipe.cmd("ZREMRANGEBYSCORE")
            .arg(&index)
            .arg("-inf")
            .arg(format!("({}", at_ms - millis(KEPT_FOR)))
            .ignore();
        pipe.zcard(&index);
        let answers: Vec<i64> = self.server.pipeline(&pipe).await.map_err(unavailable)?;
        let histories = answers.last().copied().unwrap_or(0);
        {
            let mut local = self.lock();
            let previous = std::mem::take(&mut local.lengths);
            for ((id, _), held) in round.iter().zip(&answers) {
                // A refused sample (one of another sampler came first) leaves the length as is.
                let held = usize::try_from(*held)
                    .ok()
                    .or_else(|| previous.get(id).copied())
                    .unwrap_or(0);
                local.lengths.insert(id.clone(), held);
            }
        }
        let excess = usize::try_from(histories)
            .unwrap_or(0)
            .saturating_sub(MAX_QUEUES);
        if excess > 0 {
            // The histories sampled longest ago go: gone queues, then those past the first
            // MAX_QUEUES ids (this round's all carry its time).
            let mut oldest = redis::cmd("ZRANGE");
            oldest.arg(&index).arg(0).arg(excess - 1);
            let evicted: Vec<String> = self.server.query(&oldest).await.map_err(unavailable)?;
            self.forget(&evicted).await?;
            let mut local = self.lock();
            for id in &evicted {
                local.lengths.remove(id);
            }
        }
        Ok(())
    }

    async fn samples(
        &self,
        queue_id: &str,
        since: Option<DateTime<Utc>>,
    ) -> StateResult<Vec<Sample>> {
        let mut command = redis::cmd("ZRANGEBYSCORE");
        command
            .arg(self.queue_key(queue_id, "samples"))
            .arg(since.map_or_else(
                || "-inf".to_owned(),
                |since| since.timestamp_millis().to_string(),
            ))
            .arg("+inf");
        let members: Vec<String> = self.server.query(&command).await.map_err(unavailable)?;
        Ok(members.iter().filter_map(|member| decode(member)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_read_back_as_the_append_script_writes_them() {
        let stats = QueueStats {
            visible: 3,
            in_flight: 2,
            delayed: 1,
            oldest_age_seconds: None,
        };
        let member = format!("1800000000000:{}:7:5:9", encode(&stats));
        let sample = decode(&member).unwrap();
        assert_eq!(sample.at_millis, 1_800_000_000_000);
        let activity = Activity {
            sends: 5,
            receives: 9,
            repeated: 7,
        };
        assert_eq!(sample.counts, Some(Counts::new(&stats, activity)));
        // A member written before sends and receives were counted.
        let older = decode(&format!("1800000000000:{}:7", encode(&stats))).unwrap();
        let repeated_only = Activity {
            repeated: 7,
            ..Activity::default()
        };
        assert_eq!(older.counts, Some(Counts::new(&stats, repeated_only)));
        let aged = QueueStats {
            oldest_age_seconds: Some(42),
            ..stats
        };
        let sample = decode(&format!("5:{}:0", encode(&aged))).unwrap();
        assert_eq!(sample.counts.unwrap().oldest_age_seconds, Some(42));
        assert_eq!(
            decode("1800000000000:-"),
            Some(Sample {
                at_millis: 1_800_000_000_000,
                counts: None
            })
        );
        for junk in [
            "",
            "x:-",
            "1:2:3",
            "1:a:b:c::0",
            "1:1:1:1::",
            "1:1:1:1::0:1:x",
            "1:1:1:1::0:1:2:3",
        ] {
            assert_eq!(decode(junk), None, "{junk}");
        }
    }
}
