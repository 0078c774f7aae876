//! Counting many basaltic queues (`api/basaltic/metrics.rs`, `api/basaltic/queues.rs` over
//! `core/gateway/counting.rs`): a metrics round and a queue list with counts read the queues a
//! few at a time, each within its own deadline and all within the round's interval or the list's
//! bound, so a slow backend still gives every queue its sample and a queue that never answers is a
//! gap for itself alone.

use super::*;
use sqs_gateway::core::model::QueueSettings;

/// The service with `queues` more queues on its backend (`q0000`, …), every basaltic queue
/// sampled every `interval` seconds, and an admin key; answers the service, the key and each
/// made queue's backend URL.
async fn with_queues(queues: usize, interval: u64) -> (InProcess, String, Vec<String>) {
    let (admin, entry) = basaltic_key_entry(r#""*" = ["*"]"#);
    let service = with_tables(&format!(
        "[basaltic]\nmetrics_interval_seconds = {interval}\nall_queues = true\n\n{entry}"
    ))
    .await;
    let mut urls = Vec::with_capacity(queues);
    for n in 0..queues {
        let made = service
            .backend
            .create_queue(&format!("q{n:04}"), &QueueSettings::default())
            .await
            .unwrap();
        urls.push(made.url);
    }
    (service, admin, urls)
}

/// Every basaltic queue the key sees: (name, id).
async fn listed(service: &InProcess, key: &str) -> Vec<(String, String)> {
    let reply = service
        .call(request(Method::GET, "/v1/queues", Some(key), Body::empty()))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|queue| {
            (
                queue["name"].as_str().unwrap().to_owned(),
                queue["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// A queue's samples.
async fn samples(service: &InProcess, key: &str, id: &str) -> Vec<Value> {
    let reply = service
        .call(request(
            Method::GET,
            &format!("/v1/queues/{id}/metrics"),
            Some(key),
            Body::empty(),
        ))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    reply.body["samples"].as_array().unwrap().clone()
}

/// The value of the scrape's series `series` (name and labels as the text format writes them).
async fn scraped(service: &InProcess, series: &str) -> Option<f64> {
    let reply = service
        .call(request(Method::GET, "/metrics", None, Body::empty()))
        .await;
    reply
        .text
        .lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// 1,000 queues whose counts take 100 ms each: one after another a round would take 100 s (and
/// was dropped whole); read 16 at a time it ends within its 10-second interval and every queue
/// has its sample.
#[tokio::test(start_paused = true)]
async fn basaltic_a_round_over_a_thousand_slow_queues_samples_every_queue_within_its_interval() {
    let (service, admin, _) = with_queues(1_000, 10).await;
    // Past the queue cache, so the listing holds them all.
    tokio::time::sleep(Duration::from_secs(65)).await;
    let queues = listed(&service, &admin).await;
    assert_eq!(queues.len(), 1_001, "orders and the 1,000");
    service.backend.delay_stats(Duration::from_millis(100));
    let since = service
        .call(request(Method::GET, "/metrics", None, Body::empty()))
        .await;
    assert_eq!(since.status, StatusCode::OK);
    let rounds_before = scraped(&service, "sqsgw_basaltic_metrics_rounds_total")
        .await
        .unwrap_or(0.0);
    tokio::time::sleep(Duration::from_secs(25)).await;
    let rounds = scraped(&service, "sqsgw_basaltic_metrics_rounds_total")
        .await
        .unwrap_or(0.0);
    assert!(
        rounds >= rounds_before + 2.0,
        "rounds appended: {rounds_before} then {rounds}"
    );
    let took = scraped(&service, "sqsgw_basaltic_metrics_round_seconds")
        .await
        .expect("the last round's time");
    assert!(
        took > 5.0 && took < 9.0,
        "a round took {took} s: 1,001 counts of 0.1 s, 16 at a time"
    );
    assert_eq!(
        scraped(
            &service,
            "sqsgw_basaltic_metrics_round_queues{outcome=\"sampled\"}"
        )
        .await,
        Some(1_001.0)
    );
    assert_eq!(
        scraped(
            &service,
            "sqsgw_basaltic_metrics_round_queues{outcome=\"gap\"}"
        )
        .await,
        Some(0.0)
    );
    for (name, id) in &queues {
        let samples = samples(&service, &admin, id).await;
        let last = samples
            .last()
            .unwrap_or_else(|| panic!("{name}: no sample"));
        assert!(last["visible"].is_u64(), "{name}: {last}");
    }
}

/// A queue whose count never answers is a gap in every round, alone: the others are sampled
/// every interval, and the round is appended within its interval.
#[tokio::test(start_paused = true)]
async fn basaltic_a_queue_that_never_answers_is_a_gap_for_it_alone() {
    let (service, admin, urls) = with_queues(20, 3).await;
    service.backend.hang_stats_of(&urls[7]);
    tokio::time::sleep(Duration::from_secs(65)).await;
    let queues = listed(&service, &admin).await;
    assert_eq!(queues.len(), 21);
    tokio::time::sleep(Duration::from_secs(15)).await;
    for (name, id) in &queues {
        let samples = samples(&service, &admin, id).await;
        let recent = &samples[samples.len() - 4..];
        for sample in recent {
            match name.as_str() {
                "q0007" => assert!(sample["visible"].is_null(), "{name}: {sample}"),
                _ => assert!(sample["visible"].is_u64(), "{name}: {sample}"),
            }
        }
        // One sample an interval: no round was lost to the queue that hangs.
        let at = |sample: &Value| {
            chrono::DateTime::parse_from_rfc3339(sample["at"].as_str().unwrap()).unwrap()
        };
        for pair in recent.windows(2) {
            assert_eq!(
                (at(&pair[1]) - at(&pair[0])).num_seconds(),
                3,
                "{name}: {recent:?}"
            );
        }
    }
    let took = scraped(&service, "sqsgw_basaltic_metrics_round_seconds")
        .await
        .unwrap();
    // The hanging count is cut at its deadline (metrics.count_timeout_ms, 2 s), within the
    // round's share of the 3-s interval.
    assert!(
        (2.0..=3.0 * 0.9).contains(&took),
        "the round ends at the hanging count's deadline, within its share of the interval: {took}"
    );
}

/// A queue list with counts reads them 16 at a time, each within its deadline: 1,000 counts of
/// 100 ms answer in about 6 s, not 100, and a queue that never answers shows `counts: null`
/// while the list still answers.
#[tokio::test(start_paused = true)]
async fn basaltic_a_queue_list_with_counts_reads_them_together_and_leaves_out_only_a_queue_that_hangs()
 {
    let (service, admin, urls) = with_queues(1_000, 3600).await;
    tokio::time::sleep(Duration::from_secs(65)).await;
    service.backend.delay_stats(Duration::from_millis(100));
    service.backend.hang_stats_of(&urls[3]);
    let started = tokio::time::Instant::now();
    let reply = service
        .call(request(
            Method::GET,
            "/v1/queues?include=counts",
            Some(&admin),
            Body::empty(),
        ))
        .await;
    let took = started.elapsed();
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert!(
        took < Duration::from_secs(10),
        "1,001 counts of 0.1 s, 16 at a time: {took:?}"
    );
    let queues = reply.body["queues"].as_array().unwrap();
    assert_eq!(queues.len(), 1_001);
    for queue in queues {
        match queue["name"].as_str().unwrap() {
            "q0003" => assert!(queue["counts"].is_null(), "{queue}"),
            _ => assert!(queue["counts"]["visible"].is_u64(), "{queue}"),
        }
    }
}

/// A backend too slow to count every queue within the interval: each round takes the queues it
/// reaches and starts the next where it stopped, so every queue is sampled in turn instead of the
/// same ones always and the rest never.
#[tokio::test(start_paused = true)]
async fn basaltic_rounds_that_cannot_count_every_queue_take_them_in_turn() {
    let (service, admin, _) = with_queues(100, 2).await;
    tokio::time::sleep(Duration::from_secs(65)).await;
    let queues = listed(&service, &admin).await;
    assert_eq!(queues.len(), 101);
    // A round counts for 2 s (the count deadline, longer than 0.9 of the 2-s interval): one
    // wave of 16 counts of 1.5 s fits, 16 queues a round, 7 rounds for all 101.
    service.backend.delay_stats(Duration::from_millis(1_500));
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert_eq!(
        scraped(
            &service,
            "sqsgw_basaltic_metrics_round_queues{outcome=\"sampled\"}"
        )
        .await,
        Some(16.0)
    );
    for (name, id) in &queues {
        let samples = samples(&service, &admin, id).await;
        let recent = &samples[samples.len() - 9..];
        assert!(
            recent.iter().any(|sample| sample["visible"].is_u64()),
            "{name}: no sample in the last 9 rounds: {recent:?}"
        );
        assert!(
            recent.iter().any(|sample| sample["visible"].is_null()),
            "{name}: never a gap although a round counts 16 of 101: {recent:?}"
        );
    }
}

/// Metrics take `read_metrics` and only `since` (an RFC 3339 time, once); the gateway samples
/// every queue every 10 s, so the samples follow the queue as time passes.
#[tokio::test(start_paused = true)]
async fn basaltic_metrics_are_sampled_as_time_passes() {
    let basaltic = Basaltic::start().await;
    let id = basaltic.create(json!({ "name": "invoices" })).await;
    let path = format!("/v1/queues/{id}/metrics");
    let denied = basaltic
        .call(Method::GET, &path, &basaltic.reader, Body::empty())
        .await;
    assert_eq!(code(&denied), (StatusCode::FORBIDDEN, "permission_denied"));
    for query in [
        "since=yesterday",
        "since=2026-03-01T00:00:00Z&since=2026-03-01T00:00:00Z",
        "from=2026-03-01T00:00:00Z",
    ] {
        let refused = basaltic
            .call(
                Method::GET,
                &format!("{path}?{query}"),
                &basaltic.admin,
                Body::empty(),
            )
            .await;
        assert_eq!(
            code(&refused),
            (StatusCode::BAD_REQUEST, "invalid_argument"),
            "{query}"
        );
    }
    for n in 0..3 {
        basaltic
            .send(&id, &json!({ "body": format!("m{n}") }))
            .await;
    }
    // Slept, not advanced: the sampler, a task of its own, runs while the test waits.
    tokio::time::sleep(Duration::from_secs(25)).await;
    let read = |query: &'static str| {
        let (basaltic, uri) = (&basaltic, format!("{path}{query}"));
        async move {
            basaltic
                .call(Method::GET, &uri, &basaltic.admin, Body::empty())
                .await
        }
    };
    let first = read("").await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.text);
    assert_eq!(first.body["queue_id"], id.as_str());
    assert_eq!(first.body["interval_seconds"], 10);
    let samples = first.body["samples"].as_array().unwrap();
    assert!(!samples.is_empty(), "{}", first.text);
    let last = samples.last().unwrap();
    assert_eq!(
        (&last["visible"], &last["in_flight"]),
        (&json!(3), &json!(0)),
        "{last}"
    );
    basaltic.receive(&id, json!({})).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    let second = read("").await;
    let samples = second.body["samples"].as_array().unwrap();
    let last = samples.last().unwrap();
    assert_eq!(
        (&last["visible"], &last["in_flight"]),
        (&json!(2), &json!(1)),
        "{last}"
    );
    let later = read("?since=2026-03-02T00:00:00Z").await;
    assert_eq!(later.body["samples"], json!([]), "{}", later.text);
}

/// A round for which the backend cannot even list the queues is a gap (every count `null`) for
/// each queue of the last round, not a sample missing without a trace.
#[tokio::test(start_paused = true)]
async fn basaltic_a_backend_that_cannot_list_leaves_gaps_in_the_metrics() {
    let (admin, entry) = basaltic_key_entry(r#""*" = ["*"]"#);
    let service = with_tables(&format!(
        "[basaltic]\nmetrics_interval_seconds = 1\nall_queues = true\n\n{entry}"
    ))
    .await;
    let listed = service
        .call(request(
            Method::GET,
            "/v1/queues",
            Some(&admin),
            Body::empty(),
        ))
        .await;
    let id = listed.body["queues"][0]["id"].as_str().unwrap().to_owned();
    let samples = || async {
        let reply = service
            .call(request(
                Method::GET,
                &format!("/v1/queues/{id}/metrics"),
                Some(&admin),
                Body::empty(),
            ))
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
        reply.body["samples"].as_array().unwrap().clone()
    };
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    let before = samples().await;
    assert!(before.iter().all(|s| s["visible"].is_u64()), "{before:?}");
    service.backend.fail_listings(true);
    tokio::time::sleep(Duration::from_secs(3)).await;
    service.backend.fail_listings(false);
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = samples().await;
    let gaps = after.iter().filter(|s| s["visible"].is_null()).count();
    assert!(
        gaps >= 2,
        "the rounds without a listing are gaps: {after:?}"
    );
    for gap in after.iter().filter(|s| s["visible"].is_null()) {
        for field in [
            "in_flight",
            "delayed",
            "sends",
            "receives",
            "repeated_receives",
        ] {
            assert!(gap[field].is_null(), "{field}: {gap}");
        }
    }
    assert!(
        after.last().unwrap()["visible"].is_u64(),
        "sampled again once listed"
    );
}
