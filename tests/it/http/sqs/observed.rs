//! What operators and SQS clients see of the SQS endpoint beside the answers: the action and
//! protocol in the access log and metrics, the queue attributes SDKs read, and SQS's own rule for
//! message attribute names (the other APIs take any 1-256-byte name).

use crate::harness::*;
use aws_sdk_sqs::types::QueueAttributeName;

/// The access log and the metrics name the SQS action as the client sent it, and the protocol.
#[tokio::test]
async fn the_access_log_and_metrics_name_the_sqs_action_and_protocol() {
    let gw = GatewayBuilder::new(Kind::Embedded)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    all_attributes(&client, &url).await;
    let form = format!(
        "Action=GetQueueAttributes&QueueUrl={}&AttributeName.1=All&Version=2012-11-05",
        form_urlencoded::byte_serialize(url.as_bytes()).collect::<String>()
    );
    let (status, _) = crate::http::sqs::support::query(&gw, &form).await;
    assert_eq!(status, reqwest::StatusCode::OK);
    let scrape = scrape(&gw).await;
    for protocol in ["json", "query"] {
        let series = format!(
            "sqsgw_sqs_requests_total{{action=\"GetQueueAttributes\",protocol=\"{protocol}\"}}"
        );
        assert_eq!(sample(&scrape, &series), Some(1.0), "{series}\n{scrape}");
    }
    let logs = captured_logs();
    assert!(
        logs.lines()
            .any(|line| line.contains("action=\"GetQueueAttributes\"")
                && line.contains("protocol=\"query\"")
                && line.contains("answered")),
        "an access line names the action and protocol"
    );
    gw.stop().await;
}

/// The queue's attributes as `GetQueueAttributes All` answers them.
async fn all_attributes(
    client: &aws_sdk_sqs::Client,
    url: &str,
) -> std::collections::HashMap<QueueAttributeName, String> {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap_or_default()
}

/// `GetQueueAttributes All` on a FIFO queue carries what SQS's does: the deduplication scope,
/// the throughput limit and whether SQS-managed encryption is on.
async fn fifo_queue_attributes_carry_scope_throughput_and_encryption(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::fifo("jobs.fifo"))
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("jobs.fifo").await;
    let attributes = all_attributes(&client, &url).await;
    let get = |name: QueueAttributeName| attributes.get(&name).cloned();
    assert_eq!(
        get(QueueAttributeName::DeduplicationScope).as_deref(),
        Some("queue")
    );
    assert_eq!(
        get(QueueAttributeName::FifoThroughputLimit).as_deref(),
        Some("perQueue")
    );
    assert!(
        matches!(
            get(QueueAttributeName::SqsManagedSseEnabled).as_deref(),
            Some("true" | "false")
        ),
        "{attributes:?}"
    );
    let (_, standard) = gw.sqs_queue("orders").await;
    let standard = all_attributes(&client, &standard).await;
    assert!(!standard.contains_key(&QueueAttributeName::DeduplicationScope));
    assert!(standard.contains_key(&QueueAttributeName::SqsManagedSseEnabled));
    gw.stop().await;
}

/// Names SQS refuses are refused here too, whole request, though the core could carry them;
/// letters of any script are SQS's to take (AWS takes `attr.1øßä`).
async fn attribute_names_sqs_refuses_are_refused_on_the_sqs_endpoint(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let (client, url) = gw.sqs_queue("orders").await;
    for name in ["event type", "event:type", "event!type", ".event", "a..b"] {
        let sent = client
            .send_message()
            .queue_url(&url)
            .message_body("hello")
            .message_attributes(
                name,
                aws_sdk_sqs::types::MessageAttributeValue::builder()
                    .data_type("String")
                    .string_value("v")
                    .build()
                    .unwrap(),
            )
            .send()
            .await;
        let code = sent
            .err()
            .and_then(|error| error.into_service_error().meta().code().map(str::to_owned));
        assert_eq!(code.as_deref(), Some("InvalidParameterValue"), "{name}");
    }
    assert_eq!(gw.backend_depth("orders").await, 0, "nothing was sent");
    let lettered = "attr.1øßä";
    client
        .send_message()
        .queue_url(&url)
        .message_body("lettered")
        .message_attributes(
            lettered,
            aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type("String")
                .string_value("v")
                .build()
                .unwrap(),
        )
        .send()
        .await
        .expect("letters of any script");
    let received = client
        .receive_message()
        .queue_url(&url)
        .message_attribute_names("All")
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    let attributes = received.messages()[0].message_attributes().unwrap();
    assert_eq!(attributes[lettered].string_value(), Some("v"));
    gw.stop().await;
}

crate::on_both_backends!(
    fifo_queue_attributes_carry_scope_throughput_and_encryption,
    attribute_names_sqs_refuses_are_refused_on_the_sqs_endpoint,
);
