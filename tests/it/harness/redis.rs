//! The Redis server and Redis Cluster the tests share, and the `[state.redis]` table of a gateway
//! that keeps its state there.

use super::services::Kind;

/// The Redis the tests share, each gateway under its own key prefix.
pub fn redis_url() -> String {
    std::env::var("SQSGW_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6390/0".into())
}

/// The seed nodes of the Redis Cluster the tests share.
pub fn redis_cluster_urls() -> Vec<String> {
    std::env::var("SQSGW_TEST_REDIS_CLUSTER_URLS")
        .unwrap_or_else(|_| {
            "redis://127.0.0.1:6391,redis://127.0.0.1:6392,redis://127.0.0.1:6393".into()
        })
        .split(',')
        .map(str::to_owned)
        .collect()
}

/// `[state.redis]` for a gateway of `kind` whose keys sit under `prefix`.
pub fn redis_state_config(kind: Kind, prefix: &str) -> String {
    if kind == Kind::RedisCluster {
        let urls = redis_cluster_urls();
        let nodes: Vec<String> = urls[1..].iter().map(|url| format!("\"{url}\"")).collect();
        format!(
            "[state.redis]\nurl = \"{}\"\ncluster = true\nnodes = [{}]\nprefix = \"{prefix}\"\n\n",
            urls[0],
            nodes.join(", ")
        )
    } else {
        format!(
            "[state.redis]\nurl = \"{}\"\nprefix = \"{prefix}\"\n\n",
            redis_url()
        )
    }
}
