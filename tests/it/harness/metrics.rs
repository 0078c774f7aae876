//! The Prometheus scrape of a running gateway, and the value of one sample in it.

use super::gateway::TestGateway;
use reqwest::StatusCode;
use std::time::Duration;

/// The value of one sample line (`name{labels} value`) in a scrape, if present.
pub fn sample(scrape: &str, series: &str) -> Option<f64> {
    scrape.lines().find_map(|line| {
        let (name, value) = line.rsplit_once(' ')?;
        (name == series).then(|| value.parse().ok())?
    })
}

/// `GET /metrics`, checked to be the Prometheus text format.
pub async fn scrape(gw: &TestGateway) -> String {
    let answer = gw
        .http
        .get(format!("{}/metrics", gw.base))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    assert!(
        answer.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    answer.text().await.unwrap()
}

/// Scrapes until `series` has `value` (gauges are sampled every second here).
pub async fn wait_for(gw: &TestGateway, series: &str, value: f64) -> String {
    let mut last = String::new();
    for _ in 0..100 {
        last = scrape(gw).await;
        if sample(&last, series) == Some(value) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{series} never became {value}:\n{last}");
}
