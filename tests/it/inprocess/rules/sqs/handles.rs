//! SQS receipt handles: an outdated one deletes nothing and changes the current visibility, an
//! altered one or one of another queue is invalid, and handle batches answer each entry.

use super::*;

/// Outdated handles, as on SQS: DeleteMessage succeeds and deletes nothing, ChangeMessageVisibility
/// changes the current delivery's visibility (in both protocols); the current handle still acts.
#[tokio::test(start_paused = true)]
async fn sqs_an_outdated_handle_deletes_nothing_and_changes_the_current_visibility() {
    let service = InProcess::start().await;
    service.send("twice received").await;
    let first = service
        .sqs("ReceiveMessage", json!({ "VisibilityTimeout": 0 }))
        .await;
    let old = first.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let second = service.sqs("ReceiveMessage", json!({})).await;
    let current = second.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    let change = service
        .sqs(
            "ChangeMessageVisibility",
            json!({ "ReceiptHandle": old, "VisibilityTimeout": 0 }),
        )
        .await;
    assert_eq!(change.status, StatusCode::OK, "{}", change.text);
    assert_eq!(depth(&service).await.in_flight, 0, "released");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": old }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.text);
    assert_eq!(depth(&service).await.visible, 1, "nothing was deleted");
    let xml = query(
        &service,
        &format!(
            "Action=ChangeMessageVisibility&QueueUrl={ORDERS_URL}&VisibilityTimeout=5&ReceiptHandle={}",
            form_urlencoded::byte_serialize(old.as_bytes()).collect::<String>()
        ),
    )
    .await;
    assert!(
        xml.text.contains("<ChangeMessageVisibilityResponse"),
        "{}",
        xml.text
    );
    assert_eq!(depth(&service).await.in_flight, 1, "hidden again");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// An altered handle, or one of another queue than the request's `QueueUrl`, is
/// `ReceiptHandleIsInvalid`, and nothing changes anywhere.
#[tokio::test(start_paused = true)]
async fn sqs_altered_handles_and_handles_of_another_queue_are_invalid() {
    let service = InProcess::start().await;
    let created = service
        .sqs_call("CreateQueue", json!({ "QueueName": "billing" }))
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.text);
    let billing = created.body["QueueUrl"].as_str().unwrap().to_owned();
    service.send("orders only").await;
    let got = service.sqs("ReceiveMessage", json!({})).await;
    let current = got.body["Messages"][0]["ReceiptHandle"]
        .as_str()
        .unwrap()
        .to_owned();
    for (action, body) in [
        (
            "DeleteMessage",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": altered(&current) }),
        ),
        (
            "DeleteMessage",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": "AQAAAH8forged" }),
        ),
        (
            "DeleteMessage",
            json!({ "QueueUrl": billing, "ReceiptHandle": current }),
        ),
        (
            "ChangeMessageVisibility",
            json!({ "QueueUrl": billing, "ReceiptHandle": current, "VisibilityTimeout": 0 }),
        ),
        (
            "ChangeMessageVisibility",
            json!({ "QueueUrl": ORDERS_URL, "ReceiptHandle": altered(&current), "VisibilityTimeout": 0 }),
        ),
    ] {
        let refused = service.sqs_call(action, body.clone()).await;
        assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(sqs_code(&refused), "ReceiptHandleIsInvalid", "{body}");
        assert!(!refused.text.contains(&current), "a handle was echoed");
    }
    let stats = depth(&service).await;
    assert_eq!((stats.visible, stats.in_flight), (0, 1), "nothing changed");
    let deleted = service
        .sqs("DeleteMessage", json!({ "ReceiptHandle": current }))
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(depth(&service).await.in_flight, 0);
}

/// DeleteMessageBatch and ChangeMessageVisibilityBatch answer per entry: an invalid handle
/// fails, an outdated one deletes nothing (successful) and changes the current delivery's
/// visibility (as on SQS), an entry without a handle or out of range fails on its own.
#[tokio::test(start_paused = true)]
async fn sqs_handle_batches_answer_each_entry() {
    let service = InProcess::start().await;
    send_many(&service, 2).await;
    let first = service
        .sqs(
            "ReceiveMessage",
            json!({ "MaxNumberOfMessages": 2, "VisibilityTimeout": 0 }),
        )
        .await;
    let old: Vec<String> = first.body["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
        .collect();
    let second = service
        .sqs("ReceiveMessage", json!({ "MaxNumberOfMessages": 2 }))
        .await;
    let current: Vec<String> = second.body["Messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["ReceiptHandle"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!((old.len(), current.len()), (2, 2));
    let failed_code = |reply: &Reply, id: &str| {
        let failed = reply.body["Failed"].as_array().unwrap();
        let entry = failed.iter().find(|entry| entry["Id"] == id);
        let entry = entry.unwrap_or_else(|| panic!("{id} did not fail: {}", reply.text));
        assert_eq!(entry["SenderFault"], true, "{entry}");
        entry["Code"].as_str().unwrap().to_owned()
    };
    let successful = |reply: &Reply| -> Vec<String> {
        let listed = reply.body["Successful"].as_array().unwrap().iter();
        listed
            .map(|entry| entry["Id"].as_str().unwrap().to_owned())
            .collect()
    };
    let visibility = service
        .sqs(
            "ChangeMessageVisibilityBatch",
            json!({ "Entries": [
                { "Id": "old", "ReceiptHandle": old[0], "VisibilityTimeout": 0 },
                { "Id": "long", "ReceiptHandle": current[0], "VisibilityTimeout": 43_201 },
                { "Id": "bare", "ReceiptHandle": current[0] },
                { "Id": "altered", "ReceiptHandle": altered(&current[0]), "VisibilityTimeout": 0 },
            ] }),
        )
        .await;
    assert_eq!(visibility.status, StatusCode::OK, "{}", visibility.text);
    assert_eq!(successful(&visibility), ["old"], "{}", visibility.text);
    assert_eq!(failed_code(&visibility, "long"), "InvalidParameterValue");
    assert_eq!(failed_code(&visibility, "bare"), "MissingParameter");
    assert_eq!(
        failed_code(&visibility, "altered"),
        "ReceiptHandleIsInvalid"
    );
    assert_eq!(
        depth(&service).await.in_flight,
        1,
        "the old handle released its message's current delivery, nothing else"
    );

    let delete = service
        .sqs(
            "DeleteMessageBatch",
            json!({ "Entries": [
                { "Id": "old", "ReceiptHandle": old[1] },
                { "Id": "altered", "ReceiptHandle": altered(&current[1]) },
                { "Id": "none" },
                { "Id": "current", "ReceiptHandle": current[0] },
            ] }),
        )
        .await;
    assert_eq!(delete.status, StatusCode::OK, "{}", delete.text);
    let mut done = successful(&delete);
    done.sort();
    assert_eq!(done, ["current", "old"]);
    assert_eq!(failed_code(&delete, "altered"), "ReceiptHandleIsInvalid");
    assert_eq!(failed_code(&delete, "none"), "MissingParameter");
    assert_eq!(
        depth(&service).await.in_flight,
        1,
        "only the current handle deleted"
    );
}
