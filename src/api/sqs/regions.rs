//! The regions the SQS endpoint answers for: which a signature may be scoped to, and how queue
//! URLs and ARNs name the region the client signed for. Every region reaches the same queues
//! (the gateway fronts one backend); only the names the client is shown carry its region.

use super::ACCOUNT;
use std::borrow::Cow;
use std::collections::BTreeSet;

/// The path segment that starts a queue URL of a region other than the home one:
/// `/queue/<region>/<account>/<name>`.
const REGIONAL_PATH: &str = "/queue/";

/// The regions a signature may name.
#[derive(Debug, Clone)]
pub struct Regions {
    /// `sqs_api.region`: its queue URLs carry no region (`/<account>/<name>`).
    home: String,
    /// The others, from `sqs_api.regions`.
    others: Accepted,
}

#[derive(Debug, Clone)]
enum Accepted {
    /// Any name shaped like a region (`*`).
    Any,
    /// These only.
    Listed(BTreeSet<String>),
}

impl Regions {
    /// The home region and `sqs_api.regions` (`*` for any region name).
    pub fn new(home: &str, listed: &[String]) -> Self {
        let others = if listed.iter().any(|region| region == "*") {
            Accepted::Any
        } else {
            Accepted::Listed(listed.iter().cloned().collect())
        };
        Self {
            home: home.to_owned(),
            others,
        }
    }

    /// Whether a signature may be scoped to `region`.
    pub fn accepts(&self, region: &str) -> bool {
        region == self.home
            || match &self.others {
                Accepted::Any => looks_like_a_region(region),
                Accepted::Listed(listed) => listed.contains(region),
            }
    }

    /// The home region.
    pub fn home(&self) -> &str {
        &self.home
    }

    /// The regions a refusal names: the home one, then the listed ones (`*` for any).
    pub fn described(&self) -> String {
        match &self.others {
            Accepted::Any => format!("'{}' or any region", self.home),
            Accepted::Listed(listed) => std::iter::once(&self.home)
                .chain(listed.iter().filter(|region| **region != self.home))
                .map(|region| format!("'{region}'"))
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// The path of `queue`'s URL as a client of `region` is shown it.
    pub fn queue_path(&self, region: &str, queue: &str) -> String {
        if region == self.home {
            format!("/{ACCOUNT}/{queue}")
        } else {
            format!("{REGIONAL_PATH}{region}/{ACCOUNT}/{queue}")
        }
    }
}

/// Whether `name` has the shape of a region name (`us-east-1`, `eu-central-2`,
/// `us-gov-west-1`): lowercase letters, digits and hyphens, starting with a letter, at most 32.
pub fn looks_like_a_region(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
}

/// The queue a request path names: `/<account>/<queue>` or `/queue/<region>/<account>/<queue>`.
pub fn queue_in_path(path: &str) -> Option<&str> {
    let account_and_queue = match path.strip_prefix(REGIONAL_PATH) {
        Some(rest) => rest
            .split_once('/')
            .filter(|(region, _)| looks_like_a_region(region))
            .map(|(_, rest)| rest)?,
        None => path.strip_prefix('/')?,
    };
    account_and_queue
        .strip_prefix(ACCOUNT)
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|queue| !queue.is_empty() && !queue.contains('/'))
}

/// Whether `path` is one of the endpoint's queue URL shapes or their beginnings.
pub fn serves(path: &str) -> bool {
    path.starts_with(&format!("/{ACCOUNT}/")) || path.starts_with(REGIONAL_PATH)
}

/// How one request shows the backend's queue ARNs: a backend that makes its ARNs up (the
/// embedded engine, in its own region) has them shown in the client's region, and the client's
/// ARNs read back into the backend's; real ARNs (SQS's) pass as they are.
#[derive(Debug, Clone, Copy)]
pub struct ArnView<'a> {
    /// The region of the backend's made-up ARNs; `None` when its ARNs are real.
    pub made_up_region: Option<&'a str>,
    /// The region the client signed for.
    pub client_region: &'a str,
}

impl ArnView<'_> {
    /// A backend ARN as the client is shown it.
    pub fn shown(&self, arn: String) -> String {
        match self.made_up_region {
            Some(made_up) if made_up != self.client_region => {
                match arn_parts(&arn).filter(|(region, _)| *region == made_up) {
                    Some((_, name)) => sqs_arn(self.client_region, name),
                    None => arn,
                }
            }
            _ => arn,
        }
    }

    /// A client's ARN as the backend knows it: one of this account in an accepted region names
    /// the backend's queue of that name.
    pub fn read<'s>(&self, arn: &'s str) -> Cow<'s, str> {
        match (self.made_up_region, arn_parts(arn)) {
            (Some(made_up), Some((region, name))) if region != made_up => {
                Cow::Owned(sqs_arn(made_up, name))
            }
            _ => Cow::Borrowed(arn),
        }
    }
}

/// An SQS queue ARN of this account.
fn sqs_arn(region: &str, name: &str) -> String {
    format!("arn:aws:sqs:{region}:{ACCOUNT}:{name}")
}

/// The region and queue name of an SQS queue ARN of this account.
fn arn_parts(arn: &str) -> Option<(&str, &str)> {
    let rest = arn.strip_prefix("arn:aws:sqs:")?;
    let (region, rest) = rest.split_once(':')?;
    let name = rest.strip_prefix(ACCOUNT)?.strip_prefix(':')?;
    (looks_like_a_region(region) && !name.is_empty() && !name.contains(':'))
        .then_some((region, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_home_region_is_always_accepted_and_others_as_configured() {
        let any = Regions::new("us-east-1", &["*".to_owned()]);
        assert!(any.accepts("us-east-1"));
        assert!(any.accepts("eu-central-1"));
        assert!(!any.accepts("EU-CENTRAL-1"));
        assert!(!any.accepts(""));
        assert!(!any.accepts(&"a".repeat(33)));
        let listed = Regions::new("eu-west-1", &["us-west-2".to_owned()]);
        assert!(listed.accepts("eu-west-1"));
        assert!(listed.accepts("us-west-2"));
        assert!(!listed.accepts("us-east-1"));
        assert_eq!(listed.described(), "'eu-west-1', 'us-west-2'");
        let home_only = Regions::new("us-east-1", &[]);
        assert!(!home_only.accepts("eu-central-1"));
    }

    #[test]
    fn queue_urls_name_regions_other_than_the_home_one() {
        let regions = Regions::new("us-east-1", &["*".to_owned()]);
        assert_eq!(regions.queue_path("us-east-1", "q"), "/000000000000/q");
        let regional = regions.queue_path("eu-central-1", "q.fifo");
        assert_eq!(regional, "/queue/eu-central-1/000000000000/q.fifo");
        assert_eq!(queue_in_path(&regional), Some("q.fifo"));
        assert_eq!(queue_in_path("/000000000000/q"), Some("q"));
        for not_a_queue in [
            "/",
            "/000000000000/",
            "/queue/eu-central-1/000000000000/",
            "/queue/EU/000000000000/q",
            "/queue/eu-central-1/111111111111/q",
            "/queue/eu-central-1/000000000000/q/more",
        ] {
            assert_eq!(queue_in_path(not_a_queue), None, "{not_a_queue}");
        }
    }

    #[test]
    fn made_up_arns_are_shown_in_the_clients_region_and_read_back() {
        let view = ArnView {
            made_up_region: Some("us-east-1"),
            client_region: "eu-central-1",
        };
        let shown = view.shown("arn:aws:sqs:us-east-1:000000000000:dlq".to_owned());
        assert_eq!(shown, "arn:aws:sqs:eu-central-1:000000000000:dlq");
        assert_eq!(view.read(&shown), "arn:aws:sqs:us-east-1:000000000000:dlq");
        // Another account's ARN, or anything else, passes as it is.
        assert_eq!(
            view.read("arn:aws:sqs:eu-central-1:123456789012:dlq"),
            "arn:aws:sqs:eu-central-1:123456789012:dlq"
        );
        let real = ArnView {
            made_up_region: None,
            client_region: "eu-central-1",
        };
        let arn = "arn:aws:sqs:us-east-1:000000000000:dlq";
        assert_eq!(real.shown(arn.to_owned()), arn);
        assert_eq!(real.read(arn), arn);
    }
}
