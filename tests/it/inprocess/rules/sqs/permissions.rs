//! The SQS endpoint's key permissions (`credentials/sqs_keys.rs`, `api/sqs/routes.rs`): a key
//! whose `actions` names SQS actions one by one may call exactly those, action by action, even
//! where queue management opens every action of their class to `*` keys.

use super::sigv4::{Signer, now_of};
use super::*;
use sqs_gateway::credentials::sqs_keys::SQS_ACTIONS;

/// One key a listed action, each allowed on every queue, with queue management on.
fn config() -> String {
    let mut toml = String::from("[sqs_api]\nmanage_queues = true\n\n");
    for (index, (action, _)) in SQS_ACTIONS.iter().enumerate() {
        toml.push_str(&format!(
            "[[sqs_api.credentials]]\naccess_key_id = \"AKIDONLY{index:02}\"\nsecret = \"only-{action}-secret-0123456789\"\nqueues = [\"*\"]\nactions = [\"{action}\"]\n\n"
        ));
    }
    toml
}

/// The smallest body of `action` that names the queue (`orders`) where it takes one.
fn body_of(action: &str) -> Value {
    match action {
        "ListQueues" => json!({}),
        "CreateQueue" | "GetQueueUrl" => json!({ "QueueName": "orders" }),
        "StartMessageMoveTask" | "ListMessageMoveTasks" => {
            json!({ "SourceArn": "arn:aws:sqs:us-east-1:000000000000:orders" })
        }
        "CancelMessageMoveTask" => json!({ "TaskHandle": "not-a-task" }),
        _ => json!({ "QueueUrl": "http://gateway.test/000000000000/orders" }),
    }
}

#[tokio::test(start_paused = true)]
async fn sqs_a_key_calls_exactly_the_actions_it_names() {
    let clock = Arc::new(TokioClock::at_start());
    let service = InProcess::over(&config(), Arc::clone(&clock), String::new()).await;
    let mut wrong = Vec::new();
    for (index, (named, _)) in SQS_ACTIONS.iter().enumerate() {
        let key_id = format!("AKIDONLY{index:02}");
        let secret = format!("only-{named}-secret-0123456789");
        let signer = Signer {
            key_id: &key_id,
            secret: &secret,
            region: "us-east-1",
            at: now_of(&clock),
        };
        for (action, _) in SQS_ACTIONS {
            let body = body_of(action).to_string();
            let reply = service.call(signer.sign(action, body.as_bytes())).await;
            let denied =
                reply.status == StatusCode::FORBIDDEN && sqs_code(&reply) == "AccessDenied";
            if denied == (action == named) {
                wrong.push(format!(
                    "a key naming {named} calling {action}: {} {}",
                    reply.status, reply.text
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A key that may only send batches sends them: the endpoint's look at the queue (for SQS's FIFO
/// batch rules) asks nothing of the key beyond the send itself.
#[tokio::test(start_paused = true)]
async fn sqs_a_batch_only_key_sends_batches() {
    let clock = Arc::new(TokioClock::at_start());
    let service = InProcess::over(&config(), Arc::clone(&clock), String::new()).await;
    let index = SQS_ACTIONS
        .iter()
        .position(|(action, _)| *action == "SendMessageBatch")
        .unwrap();
    let key_id = format!("AKIDONLY{index:02}");
    let secret = "only-SendMessageBatch-secret-0123456789";
    let signer = Signer {
        key_id: &key_id,
        secret,
        region: "us-east-1",
        at: now_of(&clock),
    };
    let body = json!({
        "QueueUrl": "http://gateway.test/000000000000/orders",
        "Entries": [{ "Id": "a", "MessageBody": "from a producer" }],
    })
    .to_string();
    let reply = service
        .call(signer.sign("SendMessageBatch", body.as_bytes()))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    assert_eq!(reply.body["Successful"].as_array().map(Vec::len), Some(1));
    assert_eq!(depth(&service).await.visible, 1);
}
