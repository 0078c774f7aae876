//! One set of queues behind every API: a queue made through the SQS endpoint is a basaltic queue
//! and an ezgh queue (in a project that takes all queues), a basaltic queue is the SQS queue of
//! its name, and the gateway's reserved queues stay out of the APIs that did not make them.

use crate::harness::{Kind, ORG, SQS_KEY_ID, SQS_SECRET, TestGateway, unique};
use crate::http::basaltic::support::Basaltic;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// basaltic's keys, the SQS endpoint's queue management, and an ezgh project `all` that takes
/// every queue.
async fn start(kind: Kind) -> Basaltic {
    Basaltic::start_configured(
        kind,
        "all_queues = true",
        &format!(
            "[sqs_api]\nmanage_queues = true\n\n[ezgh.organizations.{ORG}.projects.all]\nall_queues = true\n"
        ),
    )
    .await
}

/// The basaltic queues the admin key lists, as (name, id).
async fn listed(api: &Basaltic) -> Vec<(String, String)> {
    let listed = api
        .call(Method::GET, "/v1/queues", Some(&api.admin), None)
        .await;
    assert_eq!(listed.status, StatusCode::OK, "{}", listed.body);
    listed.body["queues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|queue| {
            (
                queue["name"].as_str().unwrap().to_owned(),
                queue["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ezgh_receive_url(gw: &TestGateway, project: &str, queue: &str) -> String {
    format!(
        "{}/v1/organizations/{ORG}/projects/{project}/queues/{queue}/messages/receive",
        gw.base
    )
}

async fn a_queue_made_with_the_sqs_endpoint_is_reached_by_basaltic_and_ezgh(kind: Kind) {
    let api = start(kind).await;
    let sqs = api.gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let name = unique("made-by-sqs-");
    let url = sqs
        .create_queue()
        .queue_name(&name)
        .send()
        .await
        .expect("CreateQueue")
        .queue_url
        .unwrap();
    sqs.send_message()
        .queue_url(&url)
        .message_body("from the sqs endpoint")
        .send()
        .await
        .expect("SendMessage");

    // basaltic lists it under its name, and its id reaches it.
    let found = listed(&api).await;
    let (_, id) = found
        .iter()
        .find(|(listed, _)| listed == &name)
        .unwrap_or_else(|| panic!("{name} not in the basaltic list: {found:?}"));
    let shown = api
        .call(
            Method::GET,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert_eq!(shown.body["result"]["name"], name.as_str());
    let got = api
        .receive(
            id,
            r#"{"max_messages": 10, "visibility_timeout_seconds": 30}"#,
        )
        .await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["body"], "from the sqs endpoint");
    let handle = got[0]["receipt_handle"].as_str().unwrap();
    assert_eq!(api.delete(id, handle).await.status, StatusCode::NO_CONTENT);

    // ezgh: the project that takes all queues reaches it by its name; another project does not.
    assert_eq!(
        api.send(id, r#"{"body": "from basaltic"}"#).await.status,
        StatusCode::CREATED
    );
    let closed = api
        .gw
        .post_raw(
            &ezgh_receive_url(&api.gw, "shop", &name),
            Some(&api.gw.key),
            r#"{"maxMessages": 10}"#,
        )
        .await;
    assert_eq!(closed.status, StatusCode::NOT_FOUND, "{}", closed.body);
    let received = api
        .gw
        .post_raw(
            &ezgh_receive_url(&api.gw, "all", &name),
            Some(&api.gw.key),
            r#"{"maxMessages": 10, "waitSeconds": 1}"#,
        )
        .await;
    assert_eq!(received.status, StatusCode::OK, "{}", received.body);
    let messages = received.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1, "{}", received.body);
    assert!(
        messages[0].to_string().contains("from basaltic"),
        "{}",
        received.body
    );
    api.gw.stop().await;
}

async fn a_basaltic_queue_is_the_sqs_queue_of_its_name(kind: Kind) {
    let api = start(kind).await;
    let sqs = api.gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let name = unique("made-by-basaltic-");
    let id = api.create(json!({ "name": name })).await;
    let fifo_id = api
        .create(json!({ "name": name.clone() + "-f", "type": "fifo" }))
        .await;

    let url = sqs
        .get_queue_url()
        .queue_name(&name)
        .send()
        .await
        .expect("the basaltic queue is an SQS queue of its name")
        .queue_url
        .unwrap();
    let fifo_url = sqs
        .get_queue_url()
        .queue_name(format!("{name}-f.fifo"))
        .send()
        .await
        .expect("a basaltic FIFO queue is the SQS queue of its name and .fifo")
        .queue_url
        .unwrap();
    sqs.send_message()
        .queue_url(&url)
        .message_body("through sqs")
        .send()
        .await
        .unwrap();
    let got = api.receive(&id, r#"{"max_messages": 10}"#).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["body"], "through sqs");
    sqs.send_message()
        .queue_url(&fifo_url)
        .message_body("fifo through sqs")
        .message_group_id("g")
        .message_deduplication_id("d")
        .send()
        .await
        .unwrap();
    let got = api.receive(&fifo_id, r#"{"max_messages": 10}"#).await;
    assert_eq!(got.len(), 1, "{got:?}");

    // One name, one queue: the basaltic name is taken whichever API made the queue.
    let again = api
        .call(
            Method::POST,
            "/v1/queues",
            Some(&api.admin),
            Some(&json!({ "name": name }).to_string()),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT, "{}", again.body);
    let made_by_sqs = unique("taken-");
    sqs.create_queue()
        .queue_name(&made_by_sqs)
        .send()
        .await
        .unwrap();
    let taken = api
        .call(
            Method::POST,
            "/v1/queues",
            Some(&api.admin),
            Some(&json!({ "name": made_by_sqs }).to_string()),
        )
        .await;
    assert_eq!(taken.status, StatusCode::CONFLICT, "{}", taken.body);

    // Its id is the same on another replica, which never saw it made.
    let replica = api.replica(kind).await;
    let shown = replica
        .http
        .get(format!("{}/v1/queues/{id}", replica.base))
        .bearer_auth(&api.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(shown.status(), StatusCode::OK);

    // Deleted through basaltic, it is gone for SQS too.
    let deleted = api
        .call(
            Method::DELETE,
            &format!("/v1/queues/{id}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::NO_CONTENT, "{}", deleted.body);
    let gone = sqs.get_queue_url().queue_name(&name).send().await;
    assert!(gone.is_err(), "{gone:?}");
    replica.stop().await;
    api.gw.stop().await;
}

async fn reserved_queues_stay_with_the_api_that_made_them(kind: Kind) {
    let api = start(kind).await;
    // A reserved queue (as a sombus connection's are) made behind the gateway's back.
    let reserved = format!("sqsgw_sb_{:08x}_c1", rand::random::<u32>());
    api.gw
        .backend
        .create_queue(&reserved, &Default::default())
        .await
        .unwrap();
    let found = listed(&api).await;
    assert!(
        found.iter().all(|(name, _)| !name.starts_with("sqsgw_")),
        "{found:?}"
    );
    let derived = sqs_gateway::core::alias::derived_basaltic_id(&reserved);
    let shown = api
        .call(
            Method::GET,
            &format!("/v1/queues/{derived}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(shown.status, StatusCode::NOT_FOUND, "{}", shown.body);
    let ezgh = api
        .gw
        .post_raw(
            &ezgh_receive_url(&api.gw, "all", &reserved),
            Some(&api.gw.key),
            r#"{"maxMessages": 1}"#,
        )
        .await;
    assert_eq!(ezgh.status, StatusCode::NOT_FOUND, "{}", ezgh.body);
    let body: &Value = &ezgh.body;
    assert!(!body.to_string().contains(&reserved), "{body}");
    api.gw.stop().await;
}

/// Without `basaltic.all_queues` (a config written before it existed), a basaltic key's `*` grant
/// still reaches only the queues basaltic made: no SQS queue appears, none is reached by its
/// derived id, and a create stays a reserved queue.
async fn without_all_queues_basaltic_keeps_to_its_own_queues(kind: Kind) {
    let api = Basaltic::start_configured(kind, "", "[sqs_api]\nmanage_queues = true\n").await;
    let sqs = api.gw.sqs_client(SQS_KEY_ID, SQS_SECRET);
    let name = unique("not-basaltics-");
    sqs.create_queue().queue_name(&name).send().await.unwrap();
    let found = listed(&api).await;
    assert!(found.iter().all(|(listed, _)| listed != &name), "{found:?}");
    let derived = sqs_gateway::core::alias::derived_basaltic_id(&name);
    let shown = api
        .call(
            Method::GET,
            &format!("/v1/queues/{derived}"),
            Some(&api.admin),
            None,
        )
        .await;
    assert_eq!(shown.status, StatusCode::NOT_FOUND, "{}", shown.body);
    let made = unique("own-");
    api.create(json!({ "name": made })).await;
    let plain = sqs.get_queue_url().queue_name(&made).send().await;
    assert!(
        plain.is_err(),
        "a reserved queue, not the SQS queue of its name"
    );
    api.gw.stop().await;
}

crate::on_both_backends!(
    without_all_queues_basaltic_keeps_to_its_own_queues,
    a_queue_made_with_the_sqs_endpoint_is_reached_by_basaltic_and_ezgh,
    a_basaltic_queue_is_the_sqs_queue_of_its_name,
    reserved_queues_stay_with_the_api_that_made_them,
);
