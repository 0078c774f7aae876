//! The SQS endpoint family's run, tables and targets: the gateway over LocalStack against
//! LocalStack, and the embedded engine in memory and durable.

use super::*;

/// The SQS endpoint family: LocalStack, the gateway over it, the gateway over the engine.
pub(crate) async fn sqs_family(
    options: &BenchOptions,
    work: &Path,
    secrets: &Secrets,
    localstack: Option<&Endpoint>,
) -> Result<SqsFigures, String> {
    let body = "x".repeat(options.body_bytes);
    let (mut scenarios, mut notes) = (Vec::new(), Vec::new());
    let mut targets = Vec::new();
    let managed_queues = match localstack {
        Some(localstack) => sqs_endpoint::queue_names(localstack)
            .await
            .unwrap_or_default()
            .iter()
            .filter(|name| name.starts_with("sqsgw_"))
            .count(),
        None => 0,
    };
    // The gateway over LocalStack gets queues of its own, made in LocalStack first.
    let mut proxied_queues = Vec::new();
    if let Some(localstack) = localstack {
        let suffix = format!("{:08x}", rand::random::<u32>());
        for clients in CLIENT_COUNTS {
            let name = format!("bench-{suffix}-{clients}");
            let url = sqs_endpoint::create_queue(localstack, &name).await?;
            proxied_queues.push((process::sqs_queue(clients), name, url));
        }
        // LocalStack's own rows are measured with the gateway's, per client count (below).
        targets.push((
            Target::GatewayOverLocalStack,
            GatewayBackend::Sqs {
                endpoint: localstack.url.clone(),
                queues: proxied_queues
                    .iter()
                    .map(|(gateway, backend, _)| (gateway.clone(), backend.clone()))
                    .collect(),
                redis: None,
                fan_in: true,
            },
        ));
    }
    targets.push((Target::GatewayInMemory, GatewayBackend::InMemory));
    targets.push((
        Target::GatewayDurable,
        GatewayBackend::Durable(work.join("sqs-durable")),
    ));
    let mut fsync = ceiling::Fsync::default();
    let mut own_work = OwnWork::new();
    let mut sharing = Vec::new();
    let mut proxy_rounds = Vec::new();
    let outcome = async {
        for (target, backend) in targets {
            if target == Target::GatewayDurable {
                // Next to the durable rows, so both see the same disk (it is shared).
                fsync = ceiling::fsync_ceiling(work, FSYNC_LOOP).await?;
            }
            let measured = {
                let gateway = Gateway::start(
                    &format!("gateway-sqs-{target:?}"),
                    &backend,
                    secrets,
                    work,
                    Duration::from_secs(60),
                )
                .await?;
                let (took, calls) = gateway.settle(Duration::from_secs(120)).await?;
                if calls > 100 {
                    notes.push(format!(
                        "{}: measured after its start-up reads of the backend settled ({:.1} s, {} backend calls; the gateway reads every queue under its managed sqsgw_ prefix at start and every 5 minutes, and LocalStack held {} such queues)",
                        target.label(),
                        took.as_secs_f64(),
                        count(calls as f64),
                        count(managed_queues as f64),
                    ));
                }
                let endpoint = gateway_endpoint(&gateway, secrets);
                let mut measured = Vec::new();
                // The gateway over LocalStack is measured beside LocalStack itself.
                let beside = localstack.filter(|_| target == Target::GatewayOverLocalStack);
                if let Some(localstack) = beside {
                    // A freshly started LocalStack answers its first requests slower; its first
                    // measured row should not pay that.
                    sqs_endpoint::measure(
                        Target::LocalStack,
                        localstack,
                        Queues::Fresh,
                        &body,
                        LOCALSTACK_WARM_UP,
                        &[1],
                    )
                    .await?;
                    notes.push(format!("LocalStack warmed up before its first row: {} messages sent, then received + deleted, 1 client, not measured", count(LOCALSTACK_WARM_UP as f64)));
                }
                for clients in CLIENT_COUNTS {
                    let before = match target {
                        Target::GatewayOverLocalStack => Some(gateway.scrape().await?),
                        Target::GatewayDurable => {
                            tokio::time::sleep(STORE_SAMPLED).await;
                            Some(gateway.scrape().await?)
                        }
                        _ => None,
                    };
                    if let Some(localstack) = beside {
                        // LocalStack directly and through the gateway in alternating rounds.
                        let rounds = proxy::rounds(
                            localstack,
                            &endpoint,
                            &body,
                            options.messages,
                            clients,
                        )
                        .await?;
                        measured.extend(proxy::joined(&rounds));
                        proxy_rounds.extend(rounds);
                    } else {
                        measured.extend(
                            sqs_endpoint::measure(
                                target,
                                &endpoint,
                                Queues::Configured,
                                &body,
                                options.messages,
                                &[clients],
                            )
                            .await?,
                        );
                    }
                    let Some(before) = before else { continue };
                    if target == Target::GatewayDurable {
                        tokio::time::sleep(STORE_SAMPLED).await;
                    }
                    let after = gateway.scrape().await?;
                    if target == Target::GatewayDurable {
                        sharing.extend(
                            writes_per_sync(&before, &after).map(|share| (clients, share)),
                        );
                    } else {
                        own_work.extend(
                            gateway_own_work(&before, &after)
                                .into_iter()
                                .map(|(kind, mean)| ((kind, clients), mean)),
                        );
                    }
                }
                measured
            };
            scenarios.extend(measured);
        }
        Ok::<_, String>(())
    }
    .await;
    if let Some(localstack) = localstack {
        for (_, _, url) in &proxied_queues {
            sqs_endpoint::delete_queue(localstack, url).await;
        }
    }
    // Measured interleaved, listed by target (the sort keeps send before receive+delete).
    scenarios.sort_by_key(|scenario| (scenario.target, scenario.clients));
    outcome.map(|()| SqsFigures {
        scenarios,
        proxy_rounds,
        notes,
        fsync,
        own_work,
        sharing,
    })
}

/// How long the bench waits for a durable gateway to sample its store's counts (every second in
/// its config) before reading them.
pub(crate) const STORE_SAMPLED: Duration = Duration::from_millis(1_200);

/// Between two scrapes of a durable gateway: the store's writes per synced commit (what group
/// commit shared); `None` without a sync between them.
pub(crate) fn writes_per_sync(before: &str, after: &str) -> Option<f64> {
    let delta = |name: &str| {
        let after = process::metric_sum(after, name)?;
        Some(after - process::metric_sum(before, name).unwrap_or(0.0))
    };
    let syncs = delta("sqsgw_store_syncs_total")?;
    (syncs > 0.0).then_some(delta("sqsgw_store_writes_total")? / syncs)
}

/// What the SQS family measured.
pub(crate) struct SqsFigures {
    pub(crate) scenarios: Vec<Scenario>,
    /// The proxy's rounds (LocalStack directly and the gateway over it), per client count.
    pub(crate) proxy_rounds: Vec<proxy::Round>,
    pub(crate) notes: Vec<String>,
    /// The disk's small synced writes: a second, and the median one.
    pub(crate) fsync: ceiling::Fsync,
    /// The gateway over LocalStack's own work per request, by request kind and client count.
    pub(crate) own_work: OwnWork,
    /// The durable gateway's writes per synced commit, by client count (both rows of a count).
    pub(crate) sharing: Vec<(usize, f64)>,
}

/// The mean time a request spent in the gateway outside its backend call, by request kind and
/// client count (read from the gateway's own `/metrics`).
type OwnWork = std::collections::BTreeMap<(RequestKind, usize), Duration>;

/// The gateway's metric labels of each proxied request kind: its backend call and its operation.
pub(crate) const PROXIED: [(RequestKind, &str, &str); 3] = [
    (RequestKind::SendMessageBatch, "send_batch", "send"),
    (RequestKind::ReceiveMessage, "receive", "receive"),
    (
        RequestKind::DeleteMessageBatch,
        "delete_batch",
        "acknowledge",
    ),
];

/// Between two scrapes of a gateway over SQS: per request kind, the mean of (time to answer −
/// time in the backend call), its own work (a receive that waited in the backend waited in both,
/// so waits cancel out).
pub(crate) fn gateway_own_work(before: &str, after: &str) -> Vec<(RequestKind, Duration)> {
    let delta = |name: &str, labels: &[(&str, &str)]| {
        let after = process::metric_sum_where(after, name, labels)?;
        Some(after - process::metric_sum_where(before, name, labels).unwrap_or(0.0))
    };
    PROXIED
        .iter()
        .filter_map(|&(kind, call, operation)| {
            let call = [("backend", "sqs"), ("call", call)];
            let request = [("dialect", "sqs"), ("operation", operation)];
            let in_calls = delta("sqsgw_backend_call_duration_seconds_sum", &call)?;
            let answering = delta("sqsgw_http_request_duration_seconds_sum", &request)?;
            let requests = delta("sqsgw_http_request_duration_seconds_count", &request)?;
            let own = (answering - in_calls) / requests;
            (requests > 0.0 && own.is_finite())
                .then(|| (kind, Duration::from_secs_f64(own.max(0.0))))
        })
        .collect()
}

/// Receives answered empty before a drain was done (each waited its 1 s), for receive rows.
pub(crate) fn empty_receives(scenario: &Scenario) -> String {
    match scenario.operation {
        Operation::Send => "-".into(),
        Operation::ReceiveDelete | Operation::ReceiveAck => {
            count(scenario.run.empty_receives as f64)
        }
    }
}

/// The baseline of a row: LocalStack at the same clients, else the in-memory gateway.
pub(crate) fn sqs_baseline(scenarios: &[Scenario], scenario: &Scenario) -> Option<f64> {
    find(
        scenarios,
        Target::LocalStack,
        scenario.operation,
        scenario.clients,
    )
    .or_else(|| {
        find(
            scenarios,
            Target::GatewayInMemory,
            scenario.operation,
            scenario.clients,
        )
    })
    .map(|base| base.run.messages_per_second())
}

pub(crate) fn sqs_tables(options: &BenchOptions, figures: &SqsFigures) -> Vec<Table> {
    let SqsFigures {
        scenarios,
        proxy_rounds,
        notes,
        fsync,
        own_work,
        sharing,
    } = figures;
    let fsync_per_second = fsync.per_second;
    let has_localstack = scenarios.iter().any(|s| s.target == Target::LocalStack);
    let mut table = Table::new(
        format!(
            "SQS endpoint: aws-sdk-sqs, signed; {} messages of {} bytes per row",
            count(options.messages as f64),
            options.body_bytes
        ),
        &[
            "target",
            "operation",
            "clients",
            "msg/s",
            "req/s",
            "p50 ms",
            "p99 ms",
            "empty receives",
            if has_localstack {
                "× LocalStack"
            } else {
                "× in memory"
            },
        ],
        2,
    );
    for scenario in scenarios {
        let run = &scenario.run;
        table.row(vec![
            scenario.target.label().into(),
            scenario.operation.label().into(),
            scenario.clients.to_string(),
            count(run.messages_per_second()),
            count(run.requests_per_second()),
            ms(run.percentile(None, 0.5)),
            ms(run.percentile(None, 0.99)),
            empty_receives(scenario),
            sqs_baseline(scenarios, scenario).map_or_else(
                || "-".into(),
                |base| times(run.messages_per_second() / base),
            ),
        ]);
    }
    table.note(
        "send: SendMessageBatch of 10; receive+delete: ReceiveMessage (10 at most, 1 s wait) then DeleteMessageBatch; p50/p99 over every request of the row (receives answered empty left out of them; their count is the \"empty receives\" column)",
    );
    if !has_localstack {
        table.note("LocalStack skipped: ratios are against the gateway over the in-memory engine");
    }
    for note in notes {
        table.note(note.clone());
    }
    if !sharing.is_empty() {
        let each = sharing
            .iter()
            .map(|(clients, share)| format!("{clients} client(s): {share:.1}"))
            .collect::<Vec<_>>()
            .join(", ");
        table.note(format!(
            "embedded durable, group commit: writes (sends, receives, deletes) per disk sync over both rows of a client count, from the gateway's sqsgw_store_* counters: {each}"
        ));
    }
    if let Some(durable) = find(scenarios, Target::GatewayDurable, Operation::Send, 1) {
        table.note(format!(
            "fsync ceiling (small write + fdatasync in a loop beside the data directory, measured just before the durable rows): {}/s, p50 {} ms; durable send with 1 client: {} requests/s ({} of it)",
            count(fsync_per_second),
            ms(Some(fsync.p50)),
            count(durable.run.requests_per_second()),
            percent(durable.run.requests_per_second() / fsync_per_second)
        ));
        if let Some(in_memory) = find(scenarios, Target::GatewayInMemory, Operation::Send, 1) {
            table.note(format!(
                "the same send with 1 client on the in-memory engine (no disk at all): {} requests/s ({} of the fsync ceiling): where that share is far below 75 %, one client's request path (signing, HTTP, parsing), not the disk, bounds a durable send",
                count(in_memory.run.requests_per_second()),
                percent(in_memory.run.requests_per_second() / fsync_per_second)
            ));
        }
    }
    let mut tables = vec![table];
    if has_localstack
        && scenarios
            .iter()
            .any(|s| s.target == Target::GatewayOverLocalStack)
    {
        let mut proxy = Table::new(
            "The proxy's cost: the gateway over LocalStack against LocalStack directly, per request",
            &[
                "request",
                "clients",
                "LocalStack p50",
                "p99",
                "kept-alive p50",
                "p99",
                "via gateway p50",
                "p99",
                "added p50 ms",
                "added p99 ms",
                "added p50 vs kept-alive",
                "gateway's own mean ms",
            ],
            1,
        );
        for (operation, kinds) in [
            (Operation::Send, &[RequestKind::SendMessageBatch][..]),
            (
                Operation::ReceiveDelete,
                &[RequestKind::ReceiveMessage, RequestKind::DeleteMessageBatch][..],
            ),
        ] {
            for &kind in kinds {
                for clients in CLIENT_COUNTS {
                    let (Some(direct), Some(proxied)) = (
                        find(scenarios, Target::LocalStack, operation, clients),
                        find(scenarios, Target::GatewayOverLocalStack, operation, clients),
                    ) else {
                        continue;
                    };
                    let kept_alive =
                        find(scenarios, Target::LocalStackKeptAlive, operation, clients);
                    let p = |s: &Scenario, q| s.run.percentile(Some(kind), q);
                    let p_of = |s: Option<&Scenario>, q| s.and_then(|s| p(s, q));
                    let delta = |base: Option<&Scenario>, q| {
                        ms_delta(p(proxied, q), p_of(base, q)).map_or_else(|| "-".into(), signed_ms)
                    };
                    proxy.row(vec![
                        kind.name().into(),
                        clients.to_string(),
                        ms(p(direct, 0.5)),
                        ms(p(direct, 0.99)),
                        ms(p_of(kept_alive, 0.5)),
                        ms(p_of(kept_alive, 0.99)),
                        ms(p(proxied, 0.5)),
                        ms(p(proxied, 0.99)),
                        delta(Some(direct), 0.5),
                        delta(Some(direct), 0.99),
                        delta(kept_alive, 0.5),
                        own_work
                            .get(&(kind, clients))
                            .map_or_else(|| "-".into(), |own| ms(Some(*own))),
                    ]);
                }
            }
        }
        proxy.note("gateway's own: the mean time from the gateway reading a request to answering it, less the time inside its call to LocalStack (from the gateway's /metrics, read before and after each client count); the rest of the added time is not broken down: the call's own overhead (a second signed aws-sdk-sqs request, on a connection the gateway keeps open: it asks with `Connection: keep-alive`, while the direct client, asking nothing, gets `Connection: close` and a new connection per request from LocalStack, so the gateway can answer sooner than LocalStack directly) and, with 8 clients, waiting for a CPU that LocalStack, the gateway and the clients share; kept-alive: LocalStack directly with the client asking for keep-alive as the gateway does, the baseline of the proxy's own cost");
        let per_round = SQS_ROWS
            .iter()
            .map(|&(operation, clients)| {
                let ratios =
                    proxy::round_ratios(proxy_rounds, Target::LocalStack, operation, clients);
                let each: Vec<String> = ratios.iter().map(|r| times(*r)).collect();
                let middle = median(&ratios).map_or_else(|| "-".into(), times);
                format!(
                    "{} {clients}: {} (median {middle})",
                    operation.label(),
                    each.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ");
        proxy.note(format!("LocalStack directly, kept-alive and through the gateway ran in {} alternating rounds per client count (each a fifth of the row's messages per target, the order rotated from round to round), so a drift of LocalStack's speed moves both sides of a round alike; the rows join the rounds, the targets are judged on the median round; the gateway's msg/s against LocalStack directly per round: {per_round}", proxy::PROXY_ROUNDS));
        tables.push(proxy);
    }
    tables
}

/// The largest of the median rounds' p50 that the gateway over LocalStack adds to a request of
/// `base`, and where.
pub(crate) fn worst_added_p50(
    rounds: &[proxy::Round],
    base: Target,
    rows: &[(Operation, usize)],
) -> Option<(f64, String)> {
    let mut worst: Option<(f64, String)> = None;
    for &(operation, clients) in rows {
        let kinds: &[RequestKind] = match operation {
            Operation::Send => &[RequestKind::SendMessageBatch],
            _ => &[RequestKind::ReceiveMessage, RequestKind::DeleteMessageBatch],
        };
        for &kind in kinds {
            if let Some(added) = proxy::median_added_p50(rounds, base, operation, clients, kind)
                && worst.as_ref().is_none_or(|(w, _)| added > *w)
            {
                worst = Some((added, format!("{}, {clients} client(s)", kind.name())));
            }
        }
    }
    worst
}

/// The SQS family's rows: operation and client count.
pub(crate) const SQS_ROWS: [(Operation, usize); 4] = [
    (Operation::Send, 1),
    (Operation::Send, 8),
    (Operation::ReceiveDelete, 1),
    (Operation::ReceiveDelete, 8),
];

/// A ratio target's figure and verdict over `rows`: every row's ratio (from `ratio_of`) at least
/// `bound`; not measured when a row has no ratio against `base`.
pub(crate) fn ratio_check(
    rows: &[(Operation, usize)],
    base: Target,
    bound: f64,
    ratio_of: impl Fn(Operation, usize) -> Option<f64>,
) -> (String, Verdict) {
    let mut texts = Vec::with_capacity(rows.len());
    let mut all_met = true;
    for &(operation, clients) in rows {
        let Some(ratio) = ratio_of(operation, clients) else {
            return (
                format!("{} not measured", base.label()),
                Verdict::NotMeasured,
            );
        };
        texts.push(format!("{} {clients}: {}", operation.label(), times(ratio)));
        all_met &= ratio >= bound;
    }
    (texts.join(", "), Verdict::of(all_met))
}

pub(crate) fn sqs_checks(
    scenarios: &[Scenario],
    proxy_rounds: &[proxy::Round],
    fsync: ceiling::Fsync,
) -> Vec<Check> {
    let ratio = |target: Target, base: Target, operation, clients| {
        let base = find(scenarios, base, operation, clients)?;
        let row = find(scenarios, target, operation, clients)?;
        Some(row.run.messages_per_second() / base.run.messages_per_second())
    };
    let mut checks = Vec::new();
    // The targets, against the client users run; then the same against a client that
    // keeps its connections as the gateway does: the proxy's own cost. Each is judged on the
    // median of its rounds (LocalStack and the gateway side by side in time).
    for (base, against) in [
        (Target::LocalStack, "LocalStack's"),
        (Target::LocalStackKeptAlive, "a kept-alive client's"),
    ] {
        // No rounds ran without LocalStack, so every median is missing then.
        let (figure, verdict) = ratio_check(&SQS_ROWS, base, 0.9, |operation, clients| {
            proxy::median_ratio(proxy_rounds, base, operation, clients)
        });
        checks.push(Check {
            target: format!("gateway over LocalStack ≥ 0.9× {against} throughput (median round)"),
            figure,
            verdict,
        });
        let target =
            format!("gateway over LocalStack ≤ 1 ms added p50 over {against} (median round)");
        checks.push(match worst_added_p50(proxy_rounds, base, &SQS_ROWS) {
            Some((added, where_)) => Check {
                target,
                figure: format!("worst {} ms ({where_})", signed_ms(added)),
                verdict: Verdict::of(added <= 1.0),
            },
            _ => Check {
                target,
                figure: format!("{} not measured", base.label()),
                verdict: Verdict::NotMeasured,
            },
        });
    }
    // Durability close to free: the durable engine against the in-memory one on the same path,
    // in the same run, and a durable send's added time against the disk's own sync.
    let (figure, verdict) = ratio_check(
        &[(Operation::Send, 8), (Operation::ReceiveDelete, 8)],
        Target::GatewayInMemory,
        0.75,
        |operation, clients| {
            ratio(
                Target::GatewayDurable,
                Target::GatewayInMemory,
                operation,
                clients,
            )
        },
    );
    checks.push(Check {
        target: "SQS endpoint, 8 clients: durable engine ≥ 0.75× the in-memory engine".into(),
        figure,
        verdict,
    });
    let target = "1 client: a durable send's added p50 over in memory ≤ 2× the disk's fsync p50";
    let p50 = |engine| {
        find(scenarios, engine, Operation::Send, 1).and_then(|row| row.run.percentile(None, 0.5))
    };
    checks.push(
        match (p50(Target::GatewayDurable), p50(Target::GatewayInMemory)) {
            (Some(durable), Some(in_memory)) if !fsync.p50.is_zero() => {
                let added = durable.saturating_sub(in_memory);
                Check {
                    target: target.into(),
                    figure: format!(
                        "+{} ms ({} - {}) against fsync p50 {} ms = {}",
                        ms(Some(added)),
                        ms(Some(durable)),
                        ms(Some(in_memory)),
                        ms(Some(fsync.p50)),
                        times(added.as_secs_f64() / fsync.p50.as_secs_f64())
                    ),
                    verdict: Verdict::of(added <= fsync.p50 * 2),
                }
            }
            _ => Check {
                target: target.into(),
                figure: "-".into(),
                verdict: Verdict::NotMeasured,
            },
        },
    );
    checks
}
