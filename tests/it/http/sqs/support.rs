//! What the SQS endpoint's tests share: a Query-protocol request signed with the test key (other
//! folders' tests use it too), and a gateway that may create queues, a queue made with given
//! attributes and the bodies one receive gets (the fidelity tests').

use crate::harness::*;
use aws_sdk_sqs::types::QueueAttributeName;
use reqwest::StatusCode;

/// A Query-protocol request to the SQS endpoint, signed with the test key: status and XML.
pub async fn query(gw: &TestGateway, form: &str) -> (StatusCode, String) {
    let request = signed(
        "POST",
        &format!("{}/", gw.base),
        &[
            ("host", &host_of(&gw.base)),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        form.as_bytes(),
        &Signing::default(),
    );
    let (status, _, xml) = send(gw, request).await;
    (status, xml)
}

/// A gateway that may create queues, its client, and a name no other test uses.
pub async fn managing(kind: Kind) -> (TestGateway, aws_sdk_sqs::Client, String) {
    let gw = GatewayBuilder::new(kind).managing_queues().start().await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let name = unique("fidelity-");
    (gw, client, name)
}

/// A new queue `name` with `attributes`; its URL.
pub async fn create(
    client: &aws_sdk_sqs::Client,
    name: &str,
    attributes: &[(QueueAttributeName, &str)],
) -> String {
    client
        .create_queue()
        .queue_name(name)
        .set_attributes(Some(
            attributes
                .iter()
                .map(|(attribute, value)| (attribute.clone(), (*value).to_owned()))
                .collect(),
        ))
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap()
}

/// The bodies one receive of up to 10 gets.
pub async fn bodies(client: &aws_sdk_sqs::Client, url: &str) -> Vec<String> {
    client
        .receive_message()
        .queue_url(url)
        .max_number_of_messages(10)
        .wait_time_seconds(1)
        .send()
        .await
        .unwrap()
        .messages()
        .iter()
        .filter_map(|m| m.body().map(str::to_owned))
        .collect()
}
