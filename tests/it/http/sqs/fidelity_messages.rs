//! The SQS endpoint's message rules as AWS's recorded answers show them, on both backends: a
//! message whose visibility timeout ended is received again before the messages sent after it,
//! and a message keeps the trace header it was sent with (`AWSTraceHeader`, or the request's
//! `X-Amzn-Trace-Id`) for the receives that ask for it, a queue may be its own dead-letter
//! queue, and receipt handles act and are refused as on SQS.

use super::support::{bodies, create, managing};
use crate::harness::*;
use aws_sdk_sqs::types::{
    MessageAttributeValue, MessageSystemAttributeName, MessageSystemAttributeNameForSends,
    MessageSystemAttributeValue, QueueAttributeName, SendMessageBatchRequestEntry,
};
use reqwest::StatusCode;
use std::collections::BTreeMap;
use std::time::Duration;

/// A standard queue gives back a message whose visibility timeout ended before a message sent
/// while it was in flight (SQS's best-effort order is send order, not the time a message last
/// became visible).
async fn a_message_back_from_flight_comes_before_later_sends(kind: Kind) {
    let (gw, client, name) = managing(kind).await;
    let url = create(&client, &name, &[]).await;
    let send = |body: &'static str| {
        client
            .send_message()
            .queue_url(&url)
            .message_body(body)
            .send()
    };
    send("first").await.unwrap();
    let taken = client
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(2)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert_eq!(taken.messages()[0].body(), Some("first"));
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    send("second").await.unwrap();
    // LocalStack makes messages visible again on a one-second sweep: a margin beyond the timeout.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let again = client
        .receive_message()
        .queue_url(&url)
        .visibility_timeout(30)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap();
    assert_eq!(again.messages()[0].body(), Some("first"));
    assert_eq!(bodies(&client, &url).await, ["second"]);
    client.delete_queue().queue_url(&url).send().await.unwrap();
    gw.stop().await;
}

const TRACE: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";
const HEADER: &str = "Root=1-3152b799-8954dae64eda91bc9a23a7e8;Parent=7fa8c0f79203be72;Sampled=1";

fn trace_attribute(
    value: &str,
) -> std::collections::HashMap<MessageSystemAttributeNameForSends, MessageSystemAttributeValue> {
    let value = MessageSystemAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .unwrap();
    [(MessageSystemAttributeNameForSends::AwsTraceHeader, value)].into()
}

/// Every message on the queue, received once with visibility 0: body to the attributes asked.
async fn received_attributes(
    client: &aws_sdk_sqs::Client,
    url: &str,
    expected: usize,
    names: &[MessageSystemAttributeName],
) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut seen = BTreeMap::new();
    for _ in 0..20 {
        let answer = client
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .wait_time_seconds(1)
            .set_message_system_attribute_names(Some(names.to_vec()))
            .send()
            .await
            .unwrap();
        for message in answer.messages() {
            let attributes = message
                .attributes()
                .map(|a| {
                    a.iter()
                        .map(|(k, v)| (k.as_str().to_owned(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            seen.insert(message.body().unwrap().to_owned(), attributes);
        }
        if seen.len() == expected {
            break;
        }
    }
    seen
}

/// A trace header sent as the `AWSTraceHeader` system attribute (both protocols, single and
/// batch sends) or as the request's `X-Amzn-Trace-Id` (the attribute wins) comes back with the
/// message when a receive asks for it, and only then; it changes no attribute digest, and the
/// send answers its own digest; no other system attribute name is taken, nor a header over 1 KiB.
async fn the_trace_header_travels_with_the_message(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .config("[sqs_api]\nmanage_queues = true\nallow_unsigned = true\n")
        .start()
        .await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let name = unique("traced-");
    let url = create(&client, &name, &[]).await;
    let number = MessageAttributeValue::builder()
        .data_type("Number")
        .string_value("1493147359900")
        .build()
        .unwrap();
    let plain = client
        .send_message()
        .queue_url(&url)
        .message_body("plain")
        .message_attributes("timestamp", number.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(plain.md5_of_message_system_attributes(), None);
    let traced = client
        .send_message()
        .queue_url(&url)
        .message_body("attribute")
        .message_attributes("timestamp", number)
        .set_message_system_attributes(Some(trace_attribute(TRACE)))
        .send()
        .await
        .unwrap();
    assert_eq!(
        traced.md5_of_message_attributes(),
        plain.md5_of_message_attributes(),
        "the trace header is no message attribute"
    );
    assert_eq!(
        traced.md5_of_message_system_attributes(),
        Some("5ae4d5d7636402d80f4eb6d213245a88")
    );
    let with_header = |request: &mut aws_sdk_sqs::config::http::HttpRequest| {
        request.headers_mut().insert("x-amzn-trace-id", HEADER);
    };
    client
        .send_message()
        .queue_url(&url)
        .message_body("header")
        .customize()
        .mutate_request(with_header)
        .send()
        .await
        .unwrap();
    client
        .send_message()
        .queue_url(&url)
        .message_body("both")
        .set_message_system_attributes(Some(trace_attribute(TRACE)))
        .customize()
        .mutate_request(with_header)
        .send()
        .await
        .unwrap();
    let entry = |id: &str, trace: Option<&str>| {
        SendMessageBatchRequestEntry::builder()
            .id(id)
            .message_body(id)
            .set_message_system_attributes(trace.map(trace_attribute))
            .build()
            .unwrap()
    };
    let batch = client
        .send_message_batch()
        .queue_url(&url)
        .entries(entry("batch-own", Some(TRACE)))
        .entries(entry("batch-header", None))
        .customize()
        .mutate_request(with_header)
        .send()
        .await
        .unwrap();
    assert!(batch.failed().is_empty());
    let own = batch.successful().iter().find(|s| s.id() == "batch-own");
    assert_eq!(
        own.and_then(|s| s.md5_of_message_system_attributes()),
        Some("5ae4d5d7636402d80f4eb6d213245a88")
    );
    let form = |system: &str| {
        format!(
            "Action=SendMessage&Version=2012-11-05&QueueUrl={}&MessageBody=query\
             &MessageSystemAttribute.1.Name={system}&MessageSystemAttribute.1.Value.DataType=String\
             &MessageSystemAttribute.1.Value.StringValue={}",
            url.replace(':', "%3A").replace('/', "%2F"),
            TRACE.replace('=', "%3D").replace(';', "%3B"),
        )
    };
    let post = |form: String| {
        gw.http
            .post(&gw.base)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
    };
    let answer = post(form("AWSTraceHeader")).await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let xml = answer.text().await.unwrap();
    assert!(
        xml.contains("<MD5OfMessageSystemAttributes>5ae4d5d7636402d80f4eb6d213245a88<"),
        "{xml}"
    );
    let refused = post(form("SenderId")).await.unwrap();
    assert_eq!(refused.status(), StatusCode::BAD_REQUEST);
    assert!(
        refused
            .text()
            .await
            .unwrap()
            .contains("<Code>InvalidParameterValue</Code>")
    );

    let too_long = client
        .send_message()
        .queue_url(&url)
        .message_body("too long")
        .set_message_system_attributes(Some(trace_attribute(&"x".repeat(1025))))
        .send()
        .await
        .expect_err("a trace header carries no data");
    assert_eq!(
        aws_sdk_sqs::error::ProvideErrorMetadata::code(&too_long),
        Some("InvalidParameterValue")
    );

    let unasked = received_attributes(
        &client,
        &url,
        7,
        &[MessageSystemAttributeName::SentTimestamp],
    )
    .await;
    assert_eq!(unasked.len(), 7, "{unasked:?}");
    assert!(
        unasked.values().all(|a| !a.contains_key("AWSTraceHeader")),
        "{unasked:?}"
    );
    for names in [
        vec![MessageSystemAttributeName::AwsTraceHeader],
        vec![MessageSystemAttributeName::All],
    ] {
        let asked = received_attributes(&client, &url, 7, &names).await;
        let trace: BTreeMap<&str, Option<&str>> = asked
            .iter()
            .map(|(body, a)| (body.as_str(), a.get("AWSTraceHeader").map(String::as_str)))
            .collect();
        let expected = BTreeMap::from([
            ("plain", None),
            ("attribute", Some(TRACE)),
            ("header", Some(HEADER)),
            ("both", Some(TRACE)),
            ("batch-own", Some(TRACE)),
            ("batch-header", Some(HEADER)),
            ("query", Some(TRACE)),
        ]);
        assert_eq!(trace, expected, "{names:?}");
    }
    client.delete_queue().queue_url(&url).send().await.unwrap();
    gw.stop().await;
}

/// A queue may be its own dead-letter queue, as on SQS: a message past its max receive count
/// goes back to the queue (on the embedded engine with a new receive count and its own queue as
/// the source), never lost.
async fn a_queue_may_be_its_own_dead_letter_queue(kind: Kind) {
    let (gw, client, name) = managing(kind).await;
    let url = create(&client, &name, &[]).await;
    let arn = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn).cloned())
        .unwrap();
    let policy = format!(r#"{{"deadLetterTargetArn":"{arn}","maxReceiveCount":"1"}}"#);
    client
        .set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::RedrivePolicy, &policy)
        .send()
        .await
        .expect("a queue may be its own dead-letter queue");
    client
        .send_message()
        .queue_url(&url)
        .message_body("circling")
        .send()
        .await
        .unwrap();
    let mut deliveries = Vec::new();
    for _ in 0..6 {
        let answer = client
            .receive_message()
            .queue_url(&url)
            .visibility_timeout(0)
            .wait_time_seconds(1)
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .unwrap();
        deliveries.extend(answer.messages().iter().map(|m| {
            let attribute = |name| m.attributes().and_then(|a| a.get(&name)).cloned();
            (
                attribute(MessageSystemAttributeName::ApproximateReceiveCount),
                attribute(MessageSystemAttributeName::DeadLetterQueueSourceArn),
            )
        }));
    }
    assert!(deliveries.len() >= 3, "never lost: {deliveries:?}");
    if kind == Kind::Embedded {
        assert_eq!(deliveries[0], (Some("1".into()), None));
        assert_eq!(
            deliveries[1],
            (Some("1".into()), Some(arn.clone())),
            "moved to itself, its count started again"
        );
    }
    client.delete_queue().queue_url(&url).send().await.unwrap();
    gw.stop().await;
}

/// As on SQS: an earlier delivery's handle changes the current delivery's visibility; a deleted
/// message's handle is refused `InvalidParameterValue` (not quoted); text that is no handle at all
/// is quoted back in `ReceiptHandleIsInvalid`, a handle's shape never is.
async fn handles_act_and_are_refused_as_on_sqs(kind: Kind) {
    use aws_sdk_sqs::error::ProvideErrorMetadata;
    let (gw, client, name) = managing(kind).await;
    let url = create(&client, &name, &[]).await;
    client
        .send_message()
        .queue_url(&url)
        .message_body("twice")
        .send()
        .await
        .unwrap();
    let receive = |visibility: i32| {
        client
            .receive_message()
            .queue_url(&url)
            .visibility_timeout(visibility)
            .wait_time_seconds(2)
            .send()
    };
    let first = receive(0).await.unwrap();
    let earlier = first.messages()[0].receipt_handle().unwrap().to_owned();
    let second = receive(30).await.unwrap();
    let current = second.messages()[0].receipt_handle().unwrap().to_owned();
    let change = |handle: String| {
        client
            .change_message_visibility()
            .queue_url(&url)
            .receipt_handle(handle)
            .visibility_timeout(0)
            .send()
    };
    change(earlier.clone())
        .await
        .expect("an earlier delivery's handle changes the current visibility");
    let third = receive(30).await.unwrap();
    assert_eq!(third.messages().len(), 1, "visible again");
    let latest = third.messages()[0].receipt_handle().unwrap().to_owned();
    client
        .delete_message()
        .queue_url(&url)
        .receipt_handle(&latest)
        .send()
        .await
        .unwrap();
    let gone = change(latest.clone()).await.unwrap_err();
    assert_eq!(gone.code(), Some("InvalidParameterValue"), "{gone:?}");
    let shown = gone.message().unwrap_or_default();
    assert!(shown.contains("Message does not exist"), "{shown}");
    assert!(!shown.contains(&latest), "a handle is never quoted");
    let delete = |handle: String| {
        client
            .delete_message()
            .queue_url(&url)
            .receipt_handle(handle)
            .send()
    };
    let garbage = delete("garbage".into()).await.unwrap_err();
    assert_eq!(garbage.code(), Some("ReceiptHandleIsInvalid"));
    assert_eq!(
        garbage.message(),
        Some("The input receipt handle \"garbage\" is not a valid receipt handle.")
    );
    let mut altered = current.clone();
    let flipped = if altered.starts_with('A') { "B" } else { "A" };
    altered.replace_range(0..1, flipped);
    let refused = delete(altered.clone()).await.unwrap_err();
    assert_eq!(refused.code(), Some("ReceiptHandleIsInvalid"));
    assert!(
        !refused
            .message()
            .unwrap_or_default()
            .contains(&altered[..20])
    );
    client.delete_queue().queue_url(&url).send().await.unwrap();
    gw.stop().await;
}

crate::on_kind!(
    on_localstack,
    LocalStack,
    a_message_back_from_flight_comes_before_later_sends,
    the_trace_header_travels_with_the_message,
    a_queue_may_be_its_own_dead_letter_queue,
    handles_act_and_are_refused_as_on_sqs
);
crate::on_kind!(
    on_embedded,
    Embedded,
    a_message_back_from_flight_comes_before_later_sends,
    the_trace_header_travels_with_the_message,
    a_queue_may_be_its_own_dead_letter_queue,
    handles_act_and_are_refused_as_on_sqs
);
