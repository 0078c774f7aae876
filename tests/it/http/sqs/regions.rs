//! The SQS endpoint answers clients of any region, on both backends: one set of queues reached
//! from every region, with queue URLs naming the client's region (the home region's carry none),
//! and on the embedded engine ARNs naming it too (over SQS the backend's real ARNs pass as they
//! are).

use super::support::{bodies, create, managing};
use crate::harness::*;
use aws_sdk_sqs::types::QueueAttributeName;

/// The queue's attribute `attribute` as `client` reads it.
async fn attribute(
    client: &aws_sdk_sqs::Client,
    url: &str,
    attribute: QueueAttributeName,
) -> String {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(attribute.clone())
        .send()
        .await
        .unwrap()
        .attributes()
        .and_then(|attributes| attributes.get(&attribute).cloned())
        .unwrap_or_default()
}

/// A client of another region creates, finds, lists and uses the queue a home-region client
/// made, by URLs that name its region; a message sent at one URL is received at the other.
async fn clients_of_any_region_reach_the_same_queues(kind: Kind) {
    let (gw, home, name) = managing(kind).await;
    let frankfurt = gw.sqs_client_in(SQS_KEY_ID, SQS_SECRET, "eu-central-1");
    let home_url = create(&home, &name, &[]).await;
    assert_eq!(home_url, format!("{}/000000000000/{name}", gw.base));
    let regional_url = frankfurt
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .unwrap()
        .queue_url
        .unwrap();
    assert_eq!(
        regional_url,
        format!("{}/queue/eu-central-1/000000000000/{name}", gw.base)
    );
    let found = frankfurt
        .get_queue_url()
        .queue_name(&name)
        .send()
        .await
        .unwrap();
    assert_eq!(found.queue_url(), Some(regional_url.as_str()));
    let listed = frankfurt
        .list_queues()
        .queue_name_prefix(&name)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.queue_urls(), std::slice::from_ref(&regional_url));
    frankfurt
        .send_message()
        .queue_url(&regional_url)
        .message_body("sent in eu-central-1")
        .send()
        .await
        .unwrap();
    assert_eq!(bodies(&home, &home_url).await, ["sent in eu-central-1"]);
    // The Query protocol addressed by the regional URL's path alone.
    let request = signed(
        "POST",
        &regional_url,
        &[
            ("host", &host_of(&gw.base)),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        b"Action=SendMessage&MessageBody=by-path",
        &Signing {
            region: "eu-central-1",
            ..Signing::default()
        },
    );
    let (status, _, xml) = send(&gw, request).await;
    assert_eq!(status, reqwest::StatusCode::OK, "{xml}");
    assert_eq!(bodies(&frankfurt, &regional_url).await, ["by-path"]);
    home.delete_queue()
        .queue_url(&home_url)
        .send()
        .await
        .unwrap();
    gw.stop().await;
}

/// ARNs name the client's region on the embedded engine (whose ARNs are its own), and a redrive
/// policy given in one region's ARN is read in every region's; over SQS the backend's ARNs are
/// shown as they are.
async fn arns_name_the_clients_region(kind: Kind) {
    let (gw, home, name) = managing(kind).await;
    let frankfurt = gw.sqs_client_in(SQS_KEY_ID, SQS_SECRET, "eu-central-1");
    let dlq_name = format!("{name}-dlq");
    let dlq_url = create(&frankfurt, &dlq_name, &[]).await;
    let url = create(&frankfurt, &name, &[]).await;
    let dlq_arn = attribute(&frankfurt, &dlq_url, QueueAttributeName::QueueArn).await;
    let home_dlq_arn = attribute(
        &home,
        &format!("{}/000000000000/{dlq_name}", gw.base),
        QueueAttributeName::QueueArn,
    )
    .await;
    if kind == Kind::Embedded {
        assert_eq!(
            dlq_arn,
            format!("arn:aws:sqs:eu-central-1:000000000000:{dlq_name}")
        );
        assert_eq!(
            home_dlq_arn,
            format!("arn:aws:sqs:us-east-1:000000000000:{dlq_name}")
        );
    } else {
        assert_eq!(dlq_arn, home_dlq_arn, "the backend's own ARN");
    }
    let policy = format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":2}}"#);
    frankfurt
        .set_queue_attributes()
        .queue_url(&url)
        .attributes(QueueAttributeName::RedrivePolicy, &policy)
        .send()
        .await
        .unwrap();
    let read = |client: &aws_sdk_sqs::Client, url: String| {
        let client = client.clone();
        async move {
            let policy = attribute(&client, &url, QueueAttributeName::RedrivePolicy).await;
            let policy: serde_json::Value = serde_json::from_str(&policy).unwrap();
            policy["deadLetterTargetArn"].as_str().unwrap().to_owned()
        }
    };
    assert_eq!(read(&frankfurt, url.clone()).await, dlq_arn);
    let home_url = format!("{}/000000000000/{name}", gw.base);
    assert_eq!(read(&home, home_url.clone()).await, home_dlq_arn);
    let sources = frankfurt
        .list_dead_letter_source_queues()
        .queue_url(&dlq_url)
        .send()
        .await
        .unwrap();
    assert_eq!(sources.queue_urls(), std::slice::from_ref(&url));
    home.delete_queue()
        .queue_url(&home_url)
        .send()
        .await
        .unwrap();
    frankfurt
        .delete_queue()
        .queue_url(&dlq_url)
        .send()
        .await
        .unwrap();
    gw.stop().await;
}

crate::on_kind!(
    on_localstack,
    LocalStack,
    clients_of_any_region_reach_the_same_queues,
    arns_name_the_clients_region
);

crate::on_kind!(
    on_embedded,
    Embedded,
    clients_of_any_region_reach_the_same_queues,
    arns_name_the_clients_region
);
