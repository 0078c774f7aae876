//! Redrive: message move tasks out of dead-letter queues, through the SQS endpoint, on both
//! backends; and the clear refusal of a backend that cannot do it.

use crate::harness::*;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use std::time::Duration;

/// Sends `count` messages to `queue` and lets them be dead-lettered (max receive count 1).
async fn dead_letter(gw: &TestGateway, queue: &str, dlq: &str, count: usize) {
    let (client, url) = gw.sqs_queue(queue).await;
    for n in 0..count {
        client
            .send_message()
            .queue_url(&url)
            .message_body(format!("poison {n}"))
            .send()
            .await
            .unwrap();
    }
    let mut received = 0;
    for _ in 0..20 {
        let got = client
            .receive_message()
            .queue_url(&url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        received += got.messages().len();
        if received >= count && gw.backend_depth(dlq).await == count as u64 {
            return;
        }
    }
    panic!("{count} messages did not reach {dlq}");
}

async fn a_move_task_returns_dead_letters_to_their_source(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders-dlq"))
        .queue(QueueSpec::standard("orders").dead_letter_to("orders-dlq", 1))
        .managing_queues()
        .start()
        .await;
    dead_letter(&gw, "orders", "orders-dlq", 3).await;
    let (client, dlq_url) = gw.sqs_queue("orders-dlq").await;
    let (_, orders_url) = gw.sqs_queue("orders").await;
    let dlq_arn = queue_arn(&client, &dlq_url).await;
    let handle = client
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .send()
        .await
        .unwrap()
        .task_handle
        .unwrap();
    let mut task = None;
    for _ in 0..50 {
        let listed = client
            .list_message_move_tasks()
            .source_arn(&dlq_arn)
            .max_results(10)
            .send()
            .await
            .unwrap();
        let first = listed.results()[0].clone();
        if first.status() == Some("COMPLETED") {
            task = Some(first);
            break;
        }
        assert_eq!(
            first.task_handle(),
            Some(handle.as_str()),
            "a running task names its handle"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let task = task.expect("the task completes");
    assert_eq!(task.approximate_number_of_messages_moved(), 3);
    assert_eq!(task.source_arn(), Some(dlq_arn.as_str()));
    assert_eq!(task.task_handle(), None, "only a running task has a handle");
    assert_eq!(gw.backend_depth("orders-dlq").await, 0);
    assert_eq!(gw.backend_depth("orders").await, 3);
    // Back with a fresh receive count: delivered, not dead-lettered again at once.
    let back = client
        .receive_message()
        .queue_url(&orders_url)
        .max_number_of_messages(10)
        .wait_time_seconds(2)
        .send()
        .await
        .unwrap();
    assert!(!back.messages().is_empty());
    assert!(back.messages()[0].body().unwrap().starts_with("poison"));

    // A queue that is no dead-letter queue, and an ARN the gateway does not know.
    let orders_arn = queue_arn(&client, &orders_url).await;
    let refused = client
        .start_message_move_task()
        .source_arn(&orders_arn)
        .send()
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("InvalidParameterValue"));
    let unknown = client
        .start_message_move_task()
        .source_arn("arn:aws:sqs:us-east-1:000000000000:no-such-queue-anywhere")
        .send()
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Some("ResourceNotFoundException"));
    // Not a handle as SQS shapes them; one naming a queue the gateway does not know; one naming
    // this dead-letter queue and a task it does not run.
    let bogus = client
        .cancel_message_move_task()
        .task_handle("bm90IGEgaGFuZGxl")
        .send()
        .await
        .unwrap_err();
    assert_eq!(bogus.code(), Some("InvalidParameterValue"));
    assert_eq!(
        bogus.message(),
        Some("Value for parameter TaskHandle is invalid.")
    );
    let shaped = |source_arn: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(
            serde_json::json!({ "taskId": "0b5e2c1a-7f3d-4e61-9a0c-2d8f6b7e4a13", "sourceArn": source_arn })
                .to_string(),
        )
    };
    let elsewhere = client
        .cancel_message_move_task()
        .task_handle(shaped(
            "arn:aws:sqs:us-east-1:000000000000:no-such-queue-anywhere",
        ))
        .send()
        .await
        .unwrap_err();
    assert_eq!(elsewhere.code(), Some("ResourceNotFoundException"));
    assert_eq!(
        elsewhere.message(),
        Some("The resource that you specified for the SourceArn parameter doesn't exist.")
    );
    let no_task = client
        .cancel_message_move_task()
        .task_handle(shaped(&dlq_arn))
        .send()
        .await
        .unwrap_err();
    assert_eq!(no_task.code(), Some("ResourceNotFoundException"));
    assert_eq!(no_task.message(), Some("Task does not exist."));
    gw.stop().await;
}

crate::on_both_backends!(a_move_task_returns_dead_letters_to_their_source);

/// A task slowed to one message a second can be cancelled while it runs (the embedded engine
/// honours the rate; LocalStack finishes at once).
#[tokio::test]
async fn a_running_move_task_can_be_cancelled() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("jobs-dlq"))
        .queue(QueueSpec::standard("jobs").dead_letter_to("jobs-dlq", 1))
        .managing_queues()
        .start()
        .await;
    dead_letter(&gw, "jobs", "jobs-dlq", 5).await;
    let (client, dlq_url) = gw.sqs_queue("jobs-dlq").await;
    let dlq_arn = queue_arn(&client, &dlq_url).await;
    let handle = client
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .max_number_of_messages_per_second(1)
        .send()
        .await
        .unwrap()
        .task_handle
        .unwrap();
    // Shaped as SQS shapes its handles: base64 of the task id and the source queue's ARN.
    let decoded: serde_json::Value = {
        use base64::Engine as _;
        serde_json::from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(&handle)
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(decoded["sourceArn"], dlq_arn.as_str());
    assert!(uuid::Uuid::parse_str(decoded["taskId"].as_str().unwrap()).is_ok());
    let second = client
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        second.code(),
        Some("InvalidParameterValue"),
        "one task at a time"
    );
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let moved = client
        .cancel_message_move_task()
        .task_handle(&handle)
        .send()
        .await
        .unwrap()
        .approximate_number_of_messages_moved();
    assert!((1..5).contains(&moved), "{moved}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let listed = client
        .list_message_move_tasks()
        .source_arn(&dlq_arn)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.results()[0].status(), Some("CANCELLED"));
    let left = gw.backend_depth("jobs-dlq").await;
    assert_eq!(
        left + gw.backend_depth("jobs").await,
        5,
        "every message is in one queue"
    );
    assert!(left > 0);
    // A finished task cannot be cancelled.
    let again = client
        .cancel_message_move_task()
        .task_handle(&handle)
        .send()
        .await
        .unwrap_err();
    assert_eq!(again.code(), Some("ResourceNotFoundException"));
    gw.stop().await;
}

/// Redrive needs the permission: a `*` key without queue management may not.
#[tokio::test]
async fn redrive_is_a_permission() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders-dlq"))
        .queue(QueueSpec::standard("orders").dead_letter_to("orders-dlq", 1))
        .start()
        .await;
    let (client, dlq_url) = gw.sqs_queue("orders-dlq").await;
    let dlq_arn = queue_arn(&client, &dlq_url).await;
    let refused = client
        .start_message_move_task()
        .source_arn(&dlq_arn)
        .send()
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Some("AccessDenied"));
    gw.stop().await;
}

/// A dead-letter target receives the queue's messages: a key may name only a queue it may send
/// to, and a queue it may not (or none at all) answers the same, so no ARN can be probed.
#[tokio::test]
async fn a_dead_letter_target_needs_the_send_permission_on_it() {
    const MINE: &str = "AKIDGATEWAYMINE";
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("mine"))
        .queue(QueueSpec::standard("mine-dlq"))
        .queue(QueueSpec::standard("payments"))
        .config(&format!(
            "[[sqs_api.credentials]]\naccess_key_id = \"{MINE}\"\nsecret = \"{SQS_SECRET}\"\nqueues = [\"mine\", \"mine-dlq\"]\nactions = [\"SendMessage\", \"ReceiveMessage\", \"GetQueueAttributes\", \"SetQueueAttributes\"]\n"
        ))
        .start()
        .await;
    let (admin, payments_url) = gw.sqs_queue("payments").await;
    let payments_arn = queue_arn(&admin, &payments_url).await;
    let (_, dlq_url) = gw.sqs_queue("mine-dlq").await;
    let dlq_arn = queue_arn(&admin, &dlq_url).await;
    let (_, mine_url) = gw.sqs_queue("mine").await;
    let mine = gw.sqs_client(MINE, SQS_SECRET);
    let redrive_to = |arn: &str| {
        mine.set_queue_attributes()
            .queue_url(&mine_url)
            .attributes(
                aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy,
                format!("{{\"deadLetterTargetArn\":\"{arn}\",\"maxReceiveCount\":1}}"),
            )
            .send()
    };
    let redrive_policy = || async {
        admin
            .get_queue_attributes()
            .queue_url(&mine_url)
            .attribute_names(aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
            .send()
            .await
            .unwrap()
            .attributes
            .unwrap_or_default()
            .remove(&aws_sdk_sqs::types::QueueAttributeName::RedrivePolicy)
    };

    let refused = redrive_to(&payments_arn).await.unwrap_err();
    assert_eq!(refused.code(), Some("AccessDenied"), "{refused:?}");
    let missing = payments_arn.replace(":payments", ":no-such-queue");
    let refused_too = redrive_to(&missing).await.unwrap_err();
    assert_eq!(refused_too.code(), Some("AccessDenied"), "{refused_too:?}");
    assert_eq!(refused_too.message(), refused.message(), "the same answer");
    assert_eq!(redrive_policy().await, None, "nothing was set");

    // Its own dead-letter queue, which it may send to, is fine; and a message that runs out of
    // receives goes there, not elsewhere.
    redrive_to(&dlq_arn).await.unwrap();
    assert!(redrive_policy().await.unwrap().contains(&dlq_arn));
    mine.send_message()
        .queue_url(&mine_url)
        .message_body("pay 100")
        .send()
        .await
        .unwrap();
    for _ in 0..2 {
        mine.receive_message()
            .queue_url(&mine_url)
            .visibility_timeout(0)
            .send()
            .await
            .unwrap();
    }
    assert_eq!(gw.backend_depth("payments").await, 0);
    gw.stop().await;
}
