//! A sombus connection's queues are reserved: a grant on every queue sends to them and does nothing
//! else, and never lists them.

use super::*;

/// A connection's queue is reserved: a grant on every queue (here the SQS endpoint's unsigned
/// caller) may publish to it and read its address, never receive from it or purge it.
#[tokio::test(start_paused = true)]
async fn sombus_connection_queues_take_sends_from_any_queue_grant_but_nothing_else() {
    let bus = Bus::start().await;
    let connection = bus.connect(json!({ "fifo": false })).await;
    let address = bus
        .service
        .sqs_call("GetQueueUrl", json!({ "QueueName": connection.queue }))
        .await;
    assert_eq!(address.status, StatusCode::OK, "{}", address.text);
    let url = address.body["QueueUrl"].as_str().unwrap().to_owned();
    let sent = bus
        .service
        .sqs_call(
            "SendMessage",
            json!({ "QueueUrl": url, "MessageBody": r#"{"message_id":"m-1"}"# }),
        )
        .await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.text);
    for action in ["ReceiveMessage", "PurgeQueue", "DeleteQueue"] {
        let refused = bus
            .service
            .sqs_call(action, json!({ "QueueUrl": url }))
            .await;
        assert_eq!(
            refused.status,
            StatusCode::FORBIDDEN,
            "{action}: {}",
            refused.text
        );
        assert_eq!(sqs_code(&refused), "AccessDenied", "{action}");
    }
    let token = bus.token(&connection).await;
    let got = bus.receive(&token, &connection, "wait=0").await;
    assert_eq!(got.len(), 1, "the message is still there for its consumer");
    assert_eq!(got[0]["envelope"]["message_id"], "m-1");
}

/// `ListQueues` through a grant on every queue (the unsigned caller's `*`) never lists the
/// gateway's reserved queues: no sombus workspace, client id or basaltic queue is learnt so.
#[tokio::test(start_paused = true)]
async fn sombus_reserved_queues_are_never_listed_through_a_grant_on_every_queue() {
    let (admin, admin_entry) = admin_key_entry(WORKSPACE, "admin");
    let (basaltic_key, basaltic_entry) = basaltic_key_entry(r#""*" = ["*"]"#);
    let service = with_tables(&format!(
        "[sombus]\n\n{admin_entry}[basaltic]\n\n{basaltic_entry}"
    ))
    .await;
    let created = service
        .call(request(
            Method::POST,
            &format!("/v1/admin/workspaces/{WORKSPACE}/connections"),
            Some(&admin),
            "{}",
        ))
        .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.text);
    let queue = service
        .call(request(
            Method::POST,
            "/v1/queues",
            Some(&basaltic_key),
            json!({ "name": "invoices" }).to_string(),
        ))
        .await;
    assert_eq!(queue.status, StatusCode::CREATED, "{}", queue.text);
    let in_backend = service.backend.list_queues("sqsgw_").await.unwrap();
    assert_eq!(
        in_backend.len(),
        3,
        "a connection's two queues and the basaltic one: {in_backend:?}"
    );
    for body in [json!({}), json!({ "QueueNamePrefix": "sqsgw_" })] {
        let listed = service.sqs_call("ListQueues", body.clone()).await;
        assert_eq!(listed.status, StatusCode::OK, "{}", listed.text);
        let urls = listed.body["QueueUrls"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            urls.iter()
                .all(|url| !url.as_str().unwrap().contains("sqsgw_")),
            "{body}: {}",
            listed.text
        );
    }
}
