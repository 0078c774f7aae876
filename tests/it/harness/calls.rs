//! Calls a test makes on a running gateway: ezgh receives, acknowledgements and visibility changes,
//! sends through the SQS endpoint, the backend's depth, and the answers and results they give.

use super::gateway::TestGateway;
use super::keys::{SQS_KEY_ID, SQS_SECRET};
use super::names::{ORG, PROJECT};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::{BehaviorVersion, Credentials, Region};
use reqwest::StatusCode;
use serde_json::{Value, json};
use sqs_gateway::core::model::{AttributeValue, MessageAttribute};
use std::collections::BTreeMap;

/// An HTTP answer: status, headers and JSON body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl TestGateway {
    /// The gateway's time (the wall clock plus what the test moved it by).
    pub fn clock_now(&self) -> chrono::DateTime<chrono::Utc> {
        sqs_gateway::core::clock::Clock::now(self.clock.as_ref())
    }

    pub fn receive_url(&self, queue: &str) -> String {
        format!(
            "{}/v1/organizations/{ORG}/projects/{PROJECT}/queues/{queue}/messages/receive",
            self.base
        )
    }

    /// POSTs raw text with a key (or none).
    pub async fn post_raw(&self, url: &str, key: Option<&str>, body: &str) -> Answer {
        let mut request = self
            .http
            .post(url)
            .header("content-type", "application/json")
            .body(body.to_owned());
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        answer(request.send().await.expect("gateway answers")).await
    }

    pub async fn receive(&self, queue: &str, body: Value) -> Answer {
        self.post_raw(&self.receive_url(queue), Some(&self.key), &body.to_string())
            .await
    }

    /// Receives and expects 200; returns the messages.
    pub async fn receive_ok(&self, queue: &str, body: Value) -> Vec<Value> {
        let answer = self.receive(queue, body).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        answer.body["messages"].as_array().unwrap().clone()
    }

    pub async fn ack(&self, handles: &[&str]) -> Answer {
        let body = json!({ "receiptHandles": handles }).to_string();
        self.post_raw(&format!("{}/v1/receipts/ack", self.base), None, &body)
            .await
    }

    pub async fn visibility(&self, entries: &[(&str, u32)]) -> Answer {
        let entries: Vec<Value> = entries
            .iter()
            .map(|(handle, seconds)| json!({ "receiptHandle": handle, "visibilityTimeoutSeconds": seconds }))
            .collect();
        let body = json!({ "entries": entries }).to_string();
        self.post_raw(
            &format!("{}/v1/receipts/visibility", self.base),
            None,
            &body,
        )
        .await
    }

    /// Sends a message straight to the backend queue; returns its id.
    pub async fn send(&self, queue: &str, body: &str) -> String {
        self.send_with(queue, body, None, BTreeMap::new()).await
    }

    /// Sends through the gateway's own SQS endpoint (as producers do), signed with the test key.
    pub async fn send_with(
        &self,
        queue: &str,
        body: &str,
        group: Option<&str>,
        attributes: BTreeMap<String, MessageAttribute>,
    ) -> String {
        let (client, url) = self.sqs_queue(queue).await;
        let mut send = client.send_message().queue_url(url).message_body(body);
        for (name, attribute) in attributes {
            let value = aws_sdk_sqs::types::MessageAttributeValue::builder()
                .data_type(&attribute.data_type);
            let value = match attribute.value {
                AttributeValue::Text(text) => value.string_value(text),
                AttributeValue::Bytes(bytes) => {
                    value.binary_value(aws_sdk_sqs::primitives::Blob::new(bytes))
                }
            };
            send = send.message_attributes(name, value.build().unwrap());
        }
        if let Some(group) = group {
            send = send
                .message_group_id(group)
                .message_deduplication_id(format!("{:016x}", rand::random::<u64>()));
        }
        send.send()
            .await
            .expect("the message is accepted")
            .message_id
            .unwrap()
    }

    /// Messages visible plus in flight (plus delayed), as the backend counts them.
    pub async fn backend_depth(&self, queue: &str) -> u64 {
        let stats = self.backend.stats(&self.queue_urls[queue]).await.unwrap();
        stats.visible + stats.in_flight + stats.delayed
    }

    /// The test key's SQS client and the URL of gateway queue `queue`.
    pub async fn sqs_queue(&self, queue: &str) -> (Client, String) {
        let client = self.sqs_client(SQS_KEY_ID, SQS_SECRET);
        let url = client
            .get_queue_url()
            .queue_name(queue)
            .send()
            .await
            .expect("the SQS endpoint knows the queue")
            .queue_url
            .unwrap();
        (client, url)
    }

    /// An AWS SDK client pointed at the gateway's SQS endpoint.
    pub fn sqs_client(&self, key_id: &str, secret: &str) -> Client {
        self.sqs_client_in(key_id, secret, "us-east-1")
    }

    /// An AWS SDK SQS client of `region` pointed at this gateway.
    pub fn sqs_client_in(&self, key_id: &str, secret: &str, region: &str) -> Client {
        let sdk = aws_config::SdkConfig::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(region.to_owned()))
            .endpoint_url(&self.base)
            .credentials_provider(aws_sdk_sqs::config::SharedCredentialsProvider::new(
                Credentials::new(key_id, secret, None, None, "tests"),
            ))
            .build();
        Client::new(&sdk)
    }

    /// Stops the server and waits for it.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.server.await.unwrap().unwrap();
    }

    /// Ends the gateway as a crash does: nothing a stop does (draining, writing down its
    /// state) happens.
    pub async fn crash(self) {
        self.server.abort();
        assert!(self.server.await.unwrap_err().is_cancelled());
    }
}

pub async fn answer(response: reqwest::Response) -> Answer {
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON ({status}): {text}"))
    };
    Answer {
        status,
        headers,
        body,
    }
}

pub fn handle_of(message: &Value) -> &str {
    message["receiptHandle"].as_str().unwrap()
}

pub fn results(answer: &Answer) -> Vec<Value> {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.body["results"].as_array().unwrap().clone()
}

pub fn ok() -> Value {
    json!({ "ok": true })
}

pub fn stale() -> Value {
    json!({ "error": "receipt_handle_stale" })
}

pub fn invalid() -> Value {
    json!({ "error": "receipt_handle_invalid" })
}

/// `GET {path}` without a credential, answered.
pub async fn answer_of(gw: &TestGateway, path: &str) -> Answer {
    answer(
        gw.http
            .get(format!("{}{path}", gw.base))
            .send()
            .await
            .unwrap(),
    )
    .await
}
