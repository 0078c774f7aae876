//! The registry's namespaced aliases: configured ones (ezgh's project queue ids) and runtime ones,
//! which are kept on their backend queue and so survive a restart and reach other replicas.

use crate::harness::*;
use crate::on_both_backends;
use aws_sdk_sqs::error::ProvideErrorMetadata;
use serde_json::json;
use sqs_gateway::backend::embedded::EmbeddedBackend;
use sqs_gateway::core::ErrorKind;
use sqs_gateway::core::access::{Action, Caller, Grants, Principal};
use sqs_gateway::core::alias::{Alias, Namespace};
use sqs_gateway::core::backend::Backend;
use sqs_gateway::core::clock::SkewClock;
use sqs_gateway::core::model::QueueSettings;
use std::sync::Arc;

fn manager() -> Caller {
    Caller::new(Principal::Anonymous, Arc::new(Grants::everything()))
}

fn basaltic(id: &str) -> Alias {
    Alias::new(Namespace::Basaltic, [id]).unwrap()
}

/// A runtime alias names its queue at once, through the core and through a dialect (an ezgh
/// queue id bound at runtime is served like a configured one), and is refused to callers who may
/// not manage the queue, and where it would take another queue's or the config's name.
async fn runtime_aliases_name_queues_and_conflicts_are_refused(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .queue(QueueSpec::standard("audit"))
        .start()
        .await;
    let id = uuid::Uuid::new_v4().to_string();
    let alias = basaltic(&id);
    assert_eq!(
        gw.gateway.queue_by_alias(&alias).await.unwrap_err().kind,
        ErrorKind::QueueNotFound
    );
    let reader = Caller::new(
        Principal::Anonymous,
        Arc::new(Grants::none().allow("*", [Action::Receive, Action::Inspect])),
    );
    let refused = gw
        .gateway
        .bind_alias(&reader, &alias, "orders")
        .await
        .unwrap_err();
    assert_eq!(refused.kind, ErrorKind::PermissionDenied);

    gw.gateway
        .bind_alias(&manager(), &alias, "orders")
        .await
        .unwrap();
    assert_eq!(gw.gateway.queue_by_alias(&alias).await.unwrap(), "orders");
    // Binding it again to the same queue is a no-op; to another queue, a conflict.
    gw.gateway
        .bind_alias(&manager(), &alias, "orders")
        .await
        .unwrap();
    let taken = gw
        .gateway
        .bind_alias(&manager(), &alias, "audit")
        .await
        .unwrap_err();
    assert_eq!(taken.kind, ErrorKind::Conflict);
    // A configured alias belongs to the config.
    let configured = Alias::ezgh(ORG, PROJECT, "orders").unwrap();
    let config_owned = gw
        .gateway
        .bind_alias(&manager(), &configured, "audit")
        .await
        .unwrap_err();
    assert_eq!(config_owned.kind, ErrorKind::Conflict);
    assert_eq!(
        gw.gateway
            .unbind_alias(&manager(), &configured)
            .await
            .unwrap_err()
            .kind,
        ErrorKind::Conflict
    );

    // An ezgh queue id bound at runtime serves the ezgh API, and dead-letter sources and the
    // like are shown by the project's ids.
    let extra = Alias::ezgh(ORG, PROJECT, "orders-extra").unwrap();
    gw.gateway
        .bind_alias(&manager(), &extra, "orders")
        .await
        .unwrap();
    gw.send("orders", "through an alias").await;
    let messages = gw
        .receive_ok(
            "orders-extra",
            json!({ "maxMessages": 1, "waitSeconds": 5 }),
        )
        .await;
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0]["body"], "through an alias");
    let mut ids: Vec<String> = gw
        .gateway
        .aliases_of("orders", Namespace::Ezgh)
        .iter()
        .map(|alias| alias.path()[2].clone())
        .collect();
    ids.sort();
    assert_eq!(ids, ["orders", "orders-extra"]);

    // Unbound, it names nothing any more.
    gw.gateway.unbind_alias(&manager(), &extra).await.unwrap();
    assert_eq!(
        gw.receive("orders-extra", json!({ "maxMessages": 1 }))
            .await
            .status,
        404
    );
    gw.stop().await;
}

/// Runtime aliases live in reserved tags, which SQS clients neither see nor change.
async fn alias_tags_are_hidden_from_sqs_clients(kind: Kind) {
    let gw = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .managing_queues()
        .start()
        .await;
    let alias = basaltic(&uuid::Uuid::new_v4().to_string());
    gw.gateway
        .bind_alias(&manager(), &alias, "orders")
        .await
        .unwrap();
    let (client, url) = gw.sqs_queue("orders").await;
    client
        .tag_queue()
        .queue_url(&url)
        .tags("team", "payments")
        .send()
        .await
        .unwrap();
    let tags = client
        .list_queue_tags()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
    let keys: Vec<&String> = tags.tags().unwrap().keys().collect();
    assert_eq!(keys, ["team"]);
    // The backend holds the alias all the same.
    let held = gw
        .backend
        .list_queue_tags(&gw.queue_urls["orders"])
        .await
        .unwrap();
    assert_eq!(held.get(&alias.tag_key()), Some(&alias.written()));

    for (add, remove) in [(Some(alias.tag_key()), None), (None, Some(alias.tag_key()))] {
        let error = match (add, remove) {
            (Some(key), _) => client
                .tag_queue()
                .queue_url(&url)
                .tags(key, "x")
                .send()
                .await
                .unwrap_err()
                .into_service_error()
                .code()
                .map(str::to_owned),
            (_, Some(key)) => client
                .untag_queue()
                .queue_url(&url)
                .tag_keys(key)
                .send()
                .await
                .unwrap_err()
                .into_service_error()
                .code()
                .map(str::to_owned),
            _ => unreachable!(),
        };
        assert_eq!(error.as_deref(), Some("InvalidParameterValue"));
    }
    let create = client
        .create_queue()
        .queue_name(unique("tagged-"))
        .tags("SQSGW.alias.0011223344556677", "basaltic/x")
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        create.into_service_error().code(),
        Some("InvalidParameterValue")
    );
    assert_eq!(
        gw.gateway.queue_by_alias(&alias).await.unwrap(),
        "orders",
        "the alias is intact"
    );
    gw.stop().await;
}

/// On Amazon SQS (LocalStack here) a runtime alias bound by one replica is found by another: a
/// restarted gateway reads it back from the queue's tags.
async fn runtime_aliases_reach_other_replicas(kind: Kind) {
    let first = GatewayBuilder::new(kind)
        .queue(QueueSpec::standard("orders"))
        .start()
        .await;
    let alias = basaltic(&uuid::Uuid::new_v4().to_string());
    first
        .gateway
        .bind_alias(&manager(), &alias, "orders")
        .await
        .unwrap();
    let second = GatewayBuilder::new(kind).replica_of(&first).start().await;
    assert_eq!(
        second.gateway.queue_by_alias(&alias).await.unwrap(),
        "orders"
    );
    first.stop().await;
    second.stop().await;
}

on_both_backends!(
    runtime_aliases_name_queues_and_conflicts_are_refused,
    alias_tags_are_hidden_from_sqs_clients,
    runtime_aliases_reach_other_replicas,
);

/// The embedded engine keeps runtime aliases on disk: after a restart over the same data
/// directory, the alias names the same queue, and the queue's deletion takes it away.
#[tokio::test]
async fn runtime_aliases_survive_a_restart_of_the_embedded_engine() {
    let dir = tempfile::tempdir().unwrap();
    let alias = basaltic(&uuid::Uuid::new_v4().to_string());
    {
        let backend = EmbeddedBackend::open(dir.path(), Arc::new(SkewClock::default())).unwrap();
        backend
            .create_queue("orders", &QueueSettings::default())
            .await
            .unwrap();
        let gw = GatewayBuilder::new(Kind::Embedded)
            .with_backend(backend, &["orders"])
            .start()
            .await;
        gw.gateway
            .bind_alias(&manager(), &alias, "orders")
            .await
            .unwrap();
        gw.stop().await;
    }
    let backend = EmbeddedBackend::open(dir.path(), Arc::new(SkewClock::default())).unwrap();
    let gw = GatewayBuilder::new(Kind::Embedded)
        .with_backend(backend, &["orders"])
        .managing_queues()
        .start()
        .await;
    assert_eq!(gw.gateway.queue_by_alias(&alias).await.unwrap(), "orders");
    gw.gateway.delete_queue(&manager(), "orders").await.unwrap();
    assert_eq!(
        gw.gateway.queue_by_alias(&alias).await.unwrap_err().kind,
        ErrorKind::QueueNotFound
    );
    gw.stop().await;
}
