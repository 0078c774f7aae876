//! AddPermission and RemovePermission: on the embedded engine they write and remove statements
//! of the queue's kept `Policy` as SQS writes them, with SQS's refusals; over SQS they are
//! refused (a gateway key never grants AWS accounts access to the backend queue).

use super::support::{create, managing};
use crate::harness::*;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use aws_sdk_sqs::types::QueueAttributeName;

/// The queue's `Policy`, parsed, if it has one.
async fn policy(client: &aws_sdk_sqs::Client, url: &str) -> Option<serde_json::Value> {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::Policy)
        .send()
        .await
        .unwrap()
        .attributes()
        .and_then(|attributes| attributes.get(&QueueAttributeName::Policy).cloned())
        .map(|policy| serde_json::from_str(&policy).unwrap())
}

async fn add(
    client: &aws_sdk_sqs::Client,
    url: &str,
    label: &str,
    accounts: &[&str],
) -> Result<(), String> {
    let added = client
        .add_permission()
        .queue_url(url)
        .label(label)
        .set_aws_account_ids(Some(accounts.iter().map(|a| (*a).to_owned()).collect()))
        .actions("ReceiveMessage")
        .send()
        .await;
    described(added)
}

async fn remove(client: &aws_sdk_sqs::Client, url: &str, label: &str) -> Result<(), String> {
    let removed = client
        .remove_permission()
        .queue_url(url)
        .label(label)
        .send()
        .await;
    described(removed)
}

/// A call's outcome: nothing, or the error's code and message.
fn described<T, E: ProvideErrorMetadata>(result: Result<T, E>) -> Result<(), String> {
    result.map(|_| ()).map_err(|error| {
        format!(
            "{}: {}",
            error.code().unwrap_or("?"),
            error.message().unwrap_or("")
        )
    })
}

/// A statement per label, as SQS writes it; a label twice or an unknown one refused in SQS's
/// words; the policy gone with its last statement. Over SQS: `UnsupportedOperation`, and the
/// backend queue's policy untouched.
async fn permissions_are_statements_of_the_kept_policy(kind: Kind) {
    let (gw, client, name) = managing(kind).await;
    let url = create(&client, &name, &[]).await;
    let added = add(&client, &url, "partners", &["111122223333", "444455556666"]).await;
    if kind != Kind::Embedded {
        let refused = added.expect_err("served over SQS");
        assert!(
            refused.starts_with("AWS.SimpleQueueService.UnsupportedOperation"),
            "{refused}"
        );
        assert_eq!(policy(&client, &url).await, None);
        client.delete_queue().queue_url(&url).send().await.unwrap();
        gw.stop().await;
        return;
    }
    added.unwrap();
    let arn = format!("arn:aws:sqs:us-east-1:000000000000:{name}");
    assert_eq!(
        policy(&client, &url).await,
        Some(serde_json::json!({
            "Version": "2008-10-17",
            "Id": format!("{arn}/SQSDefaultPolicy"),
            "Statement": [{
                "Sid": "partners",
                "Effect": "Allow",
                "Principal": { "AWS": [
                    "arn:aws:iam::111122223333:root",
                    "arn:aws:iam::444455556666:root",
                ] },
                "Action": "SQS:ReceiveMessage",
                "Resource": arn,
            }],
        }))
    );
    let twice = add(&client, &url, "partners", &["111122223333"]).await;
    assert_eq!(
        twice.unwrap_err(),
        "InvalidParameterValue: Value partners for parameter Label is invalid. Reason: Already exists."
    );
    add(&client, &url, "auditors", &["777788889999"])
        .await
        .unwrap();
    let statements = policy(&client, &url).await.unwrap()["Statement"].clone();
    assert_eq!(statements.as_array().unwrap().len(), 2);
    assert_eq!(
        statements[1]["Principal"]["AWS"], "arn:aws:iam::777788889999:root",
        "one account alone is a string"
    );
    remove(&client, &url, "partners").await.unwrap();
    let left = policy(&client, &url).await.unwrap();
    assert_eq!(left["Statement"].as_array().unwrap().len(), 1);
    assert_eq!(left["Statement"][0]["Sid"], "auditors");
    remove(&client, &url, "auditors").await.unwrap();
    assert_eq!(
        policy(&client, &url).await,
        None,
        "gone with its last statement"
    );
    assert_eq!(
        remove(&client, &url, "auditors").await.unwrap_err(),
        "InvalidParameterValue: Value auditors for parameter Label is invalid. Reason: can't find label."
    );
    for (label, accounts) in [
        ("bad label!", &["111122223333"][..]),
        ("ok", &["12345"][..]),
    ] {
        let refused = add(&client, &url, label, accounts).await.unwrap_err();
        assert!(refused.starts_with("InvalidParameterValue"), "{refused}");
    }
    // The key that may only list queues may not change a policy.
    let limited = gw.sqs_client(SQS_LIMITED_KEY_ID, SQS_SECRET);
    let denied = add(&limited, &url, "sneaky", &["111122223333"])
        .await
        .unwrap_err();
    assert!(denied.starts_with("AccessDenied"), "{denied}");
    assert_eq!(policy(&client, &url).await, None);
    client.delete_queue().queue_url(&url).send().await.unwrap();
    gw.stop().await;
}

crate::on_kind!(
    on_localstack,
    LocalStack,
    permissions_are_statements_of_the_kept_policy
);

crate::on_kind!(
    on_embedded,
    Embedded,
    permissions_are_statements_of_the_kept_policy
);
