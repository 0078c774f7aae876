//! SQS's 60-second rules at the SQS endpoint: on the embedded engine a second purge within the
//! minute and a queue made again under a name deleted within the minute are refused as SQS
//! refuses them, unless `sqs_api.sixty_second_rules` is off; over SQS the backend keeps its own
//! (LocalStack keeps none by default, so the gateway adds no refusal there).

use super::support::create;
use crate::harness::*;
use aws_sdk_sqs::error::ProvideErrorMetadata;

/// What a call answered: `ok`, or the error's code.
fn outcome<T, E: ProvideErrorMetadata>(result: Result<T, E>) -> String {
    match result {
        Ok(_) => "ok".to_owned(),
        Err(error) => error.code().unwrap_or("?").to_owned(),
    }
}

async fn with_rules(kind: Kind, on: bool) {
    let gw = GatewayBuilder::new(kind)
        .config(&format!(
            "[sqs_api]\nmanage_queues = true\nsixty_second_rules = {on}\n"
        ))
        .start()
        .await;
    let client = gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let name = unique("sixty-");
    let url = create(&client, &name, &[]).await;
    let other = create(&client, &format!("{name}-b"), &[]).await;
    let purge = |url: String| {
        let client = client.clone();
        async move { outcome(client.purge_queue().queue_url(url).send().await) }
    };
    let enforced = on && kind == Kind::Embedded;
    assert_eq!(purge(url.clone()).await, "ok");
    client
        .send_message()
        .queue_url(&url)
        .message_body("kept")
        .send()
        .await
        .unwrap();
    let second = purge(url.clone()).await;
    let message = client
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
    if enforced {
        assert_eq!(second, "AWS.SimpleQueueService.PurgeQueueInProgress");
        assert_eq!(
            message.messages().len(),
            1,
            "the refused purge purged nothing"
        );
    } else {
        assert_eq!(second, "ok");
        assert!(message.messages().is_empty());
    }
    assert_eq!(purge(other.clone()).await, "ok", "another queue's purge");
    client.delete_queue().queue_url(&url).send().await.unwrap();
    let again = outcome(client.create_queue().queue_name(&name).send().await);
    if enforced {
        assert_eq!(again, "AWS.SimpleQueueService.QueueDeletedRecently");
        // A key that may not create the queue learns nothing of the deletion.
        let limited = gw.sqs_client(SQS_LIMITED_KEY_ID, SQS_SECRET);
        let denied = outcome(limited.create_queue().queue_name(&name).send().await);
        assert_eq!(denied, "AccessDenied");
    } else {
        assert_eq!(again, "ok");
        client.delete_queue().queue_url(&url).send().await.unwrap();
    }
    client
        .delete_queue()
        .queue_url(&other)
        .send()
        .await
        .unwrap();
    gw.stop().await;
}

async fn sixty_second_rules_as_sqs(kind: Kind) {
    with_rules(kind, true).await;
}

async fn sixty_second_rules_can_be_turned_off(kind: Kind) {
    with_rules(kind, false).await;
}

crate::on_kind!(
    on_localstack,
    LocalStack,
    sixty_second_rules_as_sqs,
    sixty_second_rules_can_be_turned_off
);

crate::on_kind!(
    on_embedded,
    Embedded,
    sixty_second_rules_as_sqs,
    sixty_second_rules_can_be_turned_off
);
