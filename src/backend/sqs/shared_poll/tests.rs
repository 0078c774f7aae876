use super::*;
use std::collections::BTreeMap;
use tokio::sync::mpsc;

/// SQS as the polls see it: each poll is recorded and waits for an answer the test gives, or
/// answers empty when its wait ends; visibility changes are recorded and succeed.
struct FakeSqs {
    asks: Mutex<Vec<PollAsk>>,
    urls: Mutex<Vec<String>>,
    answers: tokio::sync::Mutex<mpsc::UnboundedReceiver<Answer>>,
    visibility: Mutex<Vec<(String, u32)>>,
}

impl FakeSqs {
    fn asks(&self) -> Vec<PollAsk> {
        lock(&self.asks).clone()
    }

    fn visibility(&self) -> Vec<(String, u32)> {
        lock(&self.visibility).clone()
    }
}

#[async_trait]
impl PollPort for FakeSqs {
    async fn poll(&self, url: &str, ask: PollAsk) -> Answer {
        lock(&self.asks).push(ask);
        lock(&self.urls).push(url.to_owned());
        let wait = tokio::time::sleep(Duration::from_secs(ask.wait_seconds.into()));
        let mut answers = self.answers.lock().await;
        tokio::select! {
            answer = answers.recv() => answer.unwrap_or_else(|| Ok(Vec::new())),
            () = wait => Ok(Vec::new()),
        }
    }

    async fn set_visibility(
        &self,
        _url: &str,
        entries: Vec<(String, u32)>,
    ) -> Result<Vec<EntryOutcome>, BackendError> {
        let outcomes = vec![EntryOutcome::Ok; entries.len()];
        lock(&self.visibility).extend(entries);
        Ok(outcomes)
    }
}

type Polls = (
    Arc<SharedPolls>,
    Arc<FakeSqs>,
    mpsc::UnboundedSender<Answer>,
);

fn polls(max_polls: usize) -> Polls {
    bounded_polls(max_polls, None)
}

fn bounded_polls(max_polls: usize, slots: Option<Arc<PollSlots>>) -> Polls {
    let (give, answers) = mpsc::unbounded_channel();
    let sqs = Arc::new(FakeSqs {
        asks: Mutex::new(Vec::new()),
        urls: Mutex::new(Vec::new()),
        answers: tokio::sync::Mutex::new(answers),
        visibility: Mutex::new(Vec::new()),
    });
    let port: Arc<dyn PollPort> = Arc::clone(&sqs) as Arc<dyn PollPort>;
    let polls = Arc::new(SharedPolls::new(
        port,
        max_polls,
        slots,
        Duration::from_millis(20),
        Meters::default(),
    ));
    (polls, sqs, give)
}

fn message(n: u32, group: Option<&str>) -> BackendMessage {
    BackendMessage {
        message_id: format!("m{n}"),
        backend_handle: format!("h{n}"),
        body: format!("body {n}"),
        attributes: BTreeMap::new(),
        sent_at: None,
        first_received_at: None,
        receive_count: 1,
        group_id: group.map(str::to_owned),
        sequence_number: None,
        dead_letter_source_arn: None,
        deduplication_id: None,
        trace_header: None,
    }
}

fn join(max_messages: u32, wait_seconds: u64) -> Join {
    Join {
        max_messages,
        wait: Duration::from_secs(wait_seconds),
        visibility_timeout_seconds: 30,
        abandoned: CancellationToken::new(),
    }
}

/// Waiters started on `url`, each with its join.
fn start(
    polls: &Arc<SharedPolls>,
    url: &'static str,
    joins: Vec<Join>,
) -> Vec<tokio::task::JoinHandle<Answer>> {
    joins
        .into_iter()
        .map(|join| {
            let polls = Arc::clone(polls);
            tokio::spawn(async move { polls.wait(url, url.ends_with(".fifo"), &join).await })
        })
        .collect()
}

/// A waiter that joins on `url` and whose client leaves once its poll started: it answers empty.
async fn leaves_after_its_poll_started(polls: &Arc<SharedPolls>, url: &'static str, join: Join) {
    let abandoned = join.abandoned.clone();
    let waiter = start(polls, url, vec![join]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    abandoned.cancel();
    for waiter in waiter {
        assert_eq!(ids(&waiter.await.unwrap()), Vec::<String>::new());
    }
}

fn ids(answer: &Answer) -> Vec<String> {
    answer
        .as_ref()
        .unwrap()
        .iter()
        .map(|message| message.message_id.clone())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn many_idle_waiters_share_one_poll_and_each_answers_empty_when_its_wait_ends() {
    let (polls, sqs, _give) = polls(4);
    let waiters = start(&polls, "q", (0..200).map(|_| join(1, 20)).collect());
    tokio::time::sleep(Duration::from_secs(19)).await;
    assert!(waiters.iter().all(|waiter| !waiter.is_finished()));
    tokio::time::sleep(Duration::from_secs(2)).await;
    for waiter in waiters {
        assert_eq!(ids(&waiter.await.unwrap()), Vec::<String>::new());
    }
    let asks = sqs.asks();
    assert_eq!(asks.len(), 1, "one poll for 200 waiters: {asks:?}");
    assert_eq!(asks[0].max_messages, 10);
    assert_eq!(asks[0].wait_seconds, 20);
    assert_eq!(asks[0].visibility_timeout_seconds, 30);
}

#[tokio::test(start_paused = true)]
async fn a_poll_asks_for_what_its_waiters_want_and_each_message_goes_to_one_waiter() {
    let (polls, sqs, give) = polls(4);
    let mut waiters = start(&polls, "q", vec![join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    waiters.extend(start(&polls, "q", vec![join(2, 20)]));
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        sqs.asks().len(),
        1,
        "the poll in flight serves the later waiter too"
    );
    assert_eq!(sqs.asks()[0].max_messages, 1, "the first waiter alone");
    give.send(Ok(vec![message(1, None)])).unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    // The first waiter answered; the second's poll asks for its two.
    give.send(Ok(vec![message(2, None), message(3, None)]))
        .unwrap();
    let mut answers = Vec::new();
    for waiter in waiters {
        answers.push(ids(&waiter.await.unwrap()));
    }
    assert_eq!(answers, vec![vec!["m1"], vec!["m2", "m3"]]);
    assert_eq!(sqs.asks()[1].max_messages, 2);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_whose_client_left_takes_nothing_and_its_message_goes_to_the_next_waiter() {
    let (polls, sqs, give) = polls(4);
    leaves_after_its_poll_started(&polls, "q", join(1, 20)).await;
    // The poll asked for it comes back with a message nobody waits for: it is held.
    give.send(Ok(vec![message(7, None)])).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    // A waiter with another visibility timeout (another poll group) on the same queue.
    let next = start(
        &polls,
        "q",
        vec![Join {
            visibility_timeout_seconds: 45,
            ..join(1, 20)
        }],
    );
    let answer = next.into_iter().next().unwrap().await.unwrap();
    assert_eq!(ids(&answer), vec!["m7"]);
    assert_eq!(
        sqs.visibility(),
        vec![("h7".to_owned(), 45)],
        "handed on under its receipt, its own visibility set from now"
    );
    assert_eq!(sqs.asks().len(), 1, "no poll for the held message");
}

#[tokio::test(start_paused = true)]
async fn a_held_message_whose_lease_is_nearly_over_is_left_to_reappear() {
    let (polls, sqs, give) = polls(4);
    let short = Join {
        visibility_timeout_seconds: 3,
        ..join(1, 1)
    };
    let abandoned = short.abandoned.clone();
    let waiter = start(&polls, "q", vec![short]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    abandoned.cancel();
    waiter.into_iter().next().unwrap().await.unwrap().unwrap();
    give.send(Ok(vec![message(1, None)])).unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let next = start(
        &polls,
        "q",
        vec![Join {
            visibility_timeout_seconds: 3,
            ..join(1, 1)
        }],
    );
    let answer = next.into_iter().next().unwrap().await.unwrap();
    assert_eq!(ids(&answer), Vec::<String>::new());
    assert!(sqs.visibility().is_empty(), "{:?}", sqs.visibility());
}

#[tokio::test(start_paused = true)]
async fn on_a_fifo_queue_an_answer_goes_to_one_waiter_and_what_it_cannot_take_is_released() {
    let (polls, sqs, give) = polls(4);
    let waiters = start(&polls, "q.fifo", vec![join(2, 20), join(10, 20)]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        sqs.asks()[0].max_messages,
        2,
        "what the oldest waiter wants"
    );
    give.send(Ok(vec![message(1, Some("a")), message(2, Some("a"))]))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(sqs.asks()[1].max_messages, 10);
    // Say the oldest left: an answer bigger than the next one wants.
    give.send(Ok((3..13).map(|n| message(n, Some("b"))).collect()))
        .unwrap();
    let answers: Vec<Vec<String>> = futures_util::future::join_all(waiters)
        .await
        .into_iter()
        .map(|answer| ids(&answer.unwrap()))
        .collect();
    assert_eq!(answers[0], vec!["m1", "m2"]);
    assert_eq!(answers[1].len(), 10);
    assert!(sqs.visibility().is_empty());
}

#[tokio::test(start_paused = true)]
async fn on_a_fifo_queue_a_held_answer_is_handed_on_whole_up_to_the_want_and_the_rest_released() {
    let (polls, sqs, give) = polls(4);
    leaves_after_its_poll_started(&polls, "q.fifo", join(3, 20)).await;
    give.send(Ok(vec![
        message(1, Some("a")),
        message(2, Some("a")),
        message(3, Some("a")),
    ]))
    .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    let next = start(&polls, "q.fifo", vec![join(1, 20)]);
    let answer = next.into_iter().next().unwrap().await.unwrap();
    assert_eq!(ids(&answer), vec!["m1"]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let mut changes = sqs.visibility();
    changes.sort();
    assert_eq!(
        changes,
        vec![
            ("h1".to_owned(), 30),
            ("h2".to_owned(), 0),
            ("h3".to_owned(), 0)
        ],
        "the first handed on, the group's later ones released behind it"
    );
}

#[tokio::test(start_paused = true)]
async fn a_failed_poll_answers_each_waiter_its_error() {
    let (polls, _sqs, give) = polls(4);
    let waiters = start(&polls, "q", vec![join(1, 20), join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    give.send(Err(BackendError::OverLimit)).unwrap();
    for waiter in waiters {
        assert!(matches!(
            waiter.await.unwrap(),
            Err(BackendError::OverLimit)
        ));
    }
}

#[tokio::test(start_paused = true)]
async fn while_messages_flow_more_polls_run_at_once_up_to_the_bound() {
    let (polls, sqs, give) = polls(3);
    let waiters = start(&polls, "q", (0..50).map(|_| join(1, 20)).collect());
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(sqs.asks().len(), 1, "idle: one poll");
    give.send(Ok((0..10).map(|n| message(n, None)).collect()))
        .unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(sqs.asks().len(), 4, "flowing: three at once");
    for n in 0..4 {
        give.send(Ok((0..10).map(|m| message(100 * n + m, None)).collect()))
            .unwrap();
    }
    let answered = futures_util::future::join_all(waiters)
        .await
        .into_iter()
        .filter(|answer| answer.as_ref().unwrap().as_ref().unwrap().len() == 1)
        .count();
    assert_eq!(answered, 50);
}

#[tokio::test(start_paused = true)]
async fn shutdown_releases_what_is_spare_and_later_receives_still_poll() {
    let (polls, sqs, give) = polls(4);
    leaves_after_its_poll_started(&polls, "q", join(1, 20)).await;
    give.send(Ok(vec![message(1, None)])).unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    polls.shut_down();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(sqs.visibility(), vec![("h1".to_owned(), 0)]);
    // A gateway sharing this backend (a replica in one process) still receives.
    let later = start(&polls, "q", vec![join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    give.send(Ok(vec![message(2, None)])).unwrap();
    let answer = later.into_iter().next().unwrap().await.unwrap();
    assert_eq!(ids(&answer), vec!["m2"]);
}

#[tokio::test(start_paused = true)]
async fn a_waiter_whose_wait_ends_empty_takes_what_another_group_brought_for_nobody() {
    let (polls, sqs, give) = polls(4);
    let left = Join {
        visibility_timeout_seconds: 60,
        ..join(1, 20)
    };
    let abandoned = left.abandoned.clone();
    let mut waiters = start(&polls, "q", vec![left]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    // Waiting in its own group (visibility 30), with its own poll.
    waiters.extend(start(&polls, "q", vec![join(1, 3)]));
    tokio::time::sleep(Duration::from_millis(10)).await;
    abandoned.cancel();
    // The first poll answers: its waiter left, so it is spare.
    give.send(Ok(vec![message(5, None)])).unwrap();
    let answers = futures_util::future::join_all(waiters).await;
    assert_eq!(ids(answers[0].as_ref().unwrap()), Vec::<String>::new());
    assert_eq!(ids(answers[1].as_ref().unwrap()), vec!["m5"]);
    assert_eq!(sqs.visibility(), vec![("h5".to_owned(), 30)]);
}

#[tokio::test(start_paused = true)]
async fn with_every_poll_slot_taken_queues_take_turns_in_one_second_polls() {
    // Two connections: one long poll at a time.
    let (polls, sqs, _give) = bounded_polls(4, Some(Arc::new(PollSlots::new(2))));
    let waiters = start(&polls, "a", vec![join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let more = start(&polls, "b", vec![join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let urls = lock(&sqs.urls).clone();
    assert_eq!(urls, vec!["a", "b", "a"], "each queue in turn");
    assert!(
        sqs.asks().iter().all(|ask| ask.wait_seconds == 1),
        "{:?}",
        sqs.asks()
    );
    for waiter in waiters.into_iter().chain(more) {
        waiter.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn a_queue_with_many_poll_groups_takes_one_turn_at_a_time() {
    let (polls, sqs, _give) = bounded_polls(4, Some(Arc::new(PollSlots::new(2))));
    // Three visibility timeouts on queue a: three poll groups, one queue.
    let with_visibility = |seconds| Join {
        visibility_timeout_seconds: seconds,
        ..join(1, 20)
    };
    let mut waiters = Vec::new();
    for seconds in [10, 20, 30] {
        waiters.extend(start(&polls, "a", vec![with_visibility(seconds)]));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    waiters.extend(start(&polls, "b", vec![join(1, 20)]));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let urls = lock(&sqs.urls).clone();
    assert_eq!(
        urls[..3],
        ["a", "a", "b"],
        "b's turn comes before a's third group"
    );
    for waiter in waiters {
        waiter.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn while_messages_flow_a_poll_waits_briefly_for_the_consumers_it_served_to_come_back() {
    let (polls, sqs, give) = polls(4);
    let first = start(&polls, "q", (0..3).map(|_| join(1, 20)).collect());
    tokio::time::sleep(Duration::from_millis(5)).await;
    give.send(Ok((0..3).map(|n| message(n, None)).collect()))
        .unwrap();
    for waiter in first {
        assert_eq!(ids(&waiter.await.unwrap()).len(), 1);
    }
    // The three come back a moment apart (their acknowledgements took a round trip each).
    let mut again = start(&polls, "q", vec![join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(3)).await;
    again.extend(start(&polls, "q", vec![join(1, 20), join(1, 20)]));
    tokio::time::sleep(Duration::from_millis(3)).await;
    let asks = sqs.asks();
    assert_eq!(asks.len(), 2, "{asks:?}");
    assert_eq!(asks[1].max_messages, 3, "one poll for the three");
    for waiter in again {
        waiter.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn an_idle_queue_polls_at_once_for_its_first_waiter() {
    let (polls, sqs, _give) = polls(4);
    let waiter = start(&polls, "q", vec![join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(sqs.asks().len(), 1, "no gathering while nothing flows");
    for waiter in waiter {
        waiter.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_nearly_over_when_a_poll_ends_gets_no_poll_of_its_own() {
    let (polls, sqs, _give) = polls(4);
    let mut waiters = start(&polls, "q", vec![join(1, 20)]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    waiters.extend(start(&polls, "q", vec![join(1, 20)]));
    for waiter in waiters {
        assert_eq!(ids(&waiter.await.unwrap()), Vec::<String>::new());
    }
    assert_eq!(sqs.asks().len(), 1, "{:?}", sqs.asks());
}
