//! Aliases: the names each API gives a gateway queue (an ezgh project's queue id, a basaltic queue
//! UUID, a sombus connection), in one namespace per API, and how a runtime alias is kept on its
//! backend queue.
//!
//! A runtime alias is stored as a tag of the backend queue it names, under the gateway's reserved
//! prefix: the key is `sqsgw.alias.` and 16 hex digits of the alias's SHA-256, the value the alias
//! written out (`basaltic/1f0c…`). The tag lives and dies with the queue, survives restarts on the
//! embedded engine (its settings are durable) and is seen by every replica on Amazon SQS.

use crate::core::GatewayError;
use crate::core::attributes::RESERVED_PREFIX;
use sha2::{Digest, Sha256};

/// The prefix of the tags that hold aliases.
pub const ALIAS_TAG_PREFIX: &str = "sqsgw.alias.";

/// At most this many characters in one segment of an alias.
pub const MAX_SEGMENT: usize = 128;

/// At most this many characters in an alias written out (SQS's limit on a tag value).
pub const MAX_WRITTEN: usize = 256;

/// Which API an alias belongs to: each has its own names, and they never collide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Namespace {
    /// ezgh: organization, project, queue id.
    Ezgh,
    /// basaltic: the queue's UUID.
    Basaltic,
    /// sombus: tenant, consumer connection.
    Sombus,
}

impl Namespace {
    /// The namespace as written in an alias.
    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::Ezgh => "ezgh",
            Namespace::Basaltic => "basaltic",
            Namespace::Sombus => "sombus",
        }
    }

    /// How many segments an alias of this namespace has.
    pub fn segments(self) -> usize {
        match self {
            Namespace::Ezgh => 3,
            Namespace::Basaltic => 1,
            Namespace::Sombus => 2,
        }
    }

    fn parse(text: &str) -> Option<Self> {
        [Namespace::Ezgh, Namespace::Basaltic, Namespace::Sombus]
            .into_iter()
            .find(|namespace| namespace.as_str() == text)
    }
}

/// One API's name for a gateway queue.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Alias {
    namespace: Namespace,
    path: Vec<String>,
}

impl Alias {
    /// The alias `path` in `namespace`: as many segments as the namespace has, each 1 to 128 of
    /// ASCII letters, digits and `-._~:@`.
    pub fn new<S: Into<String>>(
        namespace: Namespace,
        path: impl IntoIterator<Item = S>,
    ) -> Result<Self, GatewayError> {
        let path: Vec<String> = path.into_iter().map(Into::into).collect();
        if path.len() != namespace.segments() {
            return Err(GatewayError::invalid_request(format!(
                "a {} alias has {} parts",
                namespace.as_str(),
                namespace.segments()
            )));
        }
        if let Some(bad) = path.iter().find(|segment| !valid_segment(segment)) {
            let shown: String = bad.chars().take(40).collect();
            return Err(GatewayError::invalid_request(format!(
                "`{}` cannot be part of an alias: use 1 to {MAX_SEGMENT} letters, digits and -._~:@",
                shown.escape_default()
            )));
        }
        let alias = Self { namespace, path };
        if alias.written().len() > MAX_WRITTEN {
            return Err(GatewayError::invalid_request(format!(
                "an alias is at most {MAX_WRITTEN} characters written out"
            )));
        }
        Ok(alias)
    }

    /// An ezgh queue: the queue id `queue` of `project` in `organization`.
    pub fn ezgh(organization: &str, project: &str, queue: &str) -> Result<Self, GatewayError> {
        Self::new(Namespace::Ezgh, [organization, project, queue])
    }

    /// The namespace.
    pub fn namespace(&self) -> Namespace {
        self.namespace
    }

    /// The segments after the namespace.
    pub fn path(&self) -> &[String] {
        &self.path
    }

    /// Whether the alias is in `namespace` and its path starts with `prefix`.
    pub fn is_under(&self, namespace: Namespace, prefix: &[&str]) -> bool {
        self.namespace == namespace
            && self.path.len() >= prefix.len()
            && self.path.iter().zip(prefix).all(|(a, b)| a == b)
    }

    /// The alias written out: the namespace and the segments, joined by `/`.
    pub fn written(&self) -> String {
        let mut written = self.namespace.as_str().to_owned();
        for segment in &self.path {
            written.push('/');
            written.push_str(segment);
        }
        written
    }

    /// Reads an alias written out by [`Alias::written`].
    pub fn parse_written(text: &str) -> Option<Self> {
        let mut parts = text.split('/');
        let namespace = Namespace::parse(parts.next()?)?;
        Self::new(namespace, parts).ok()
    }

    /// The key of the backend queue tag that holds this alias.
    pub fn tag_key(&self) -> String {
        let digest = Sha256::digest(self.written().as_bytes());
        format!("{ALIAS_TAG_PREFIX}{}", hex::encode(&digest[..8]))
    }
}

impl std::fmt::Display for Alias {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.written())
    }
}

/// The UUID namespace of the basaltic ids derived from queue names (a fixed random UUID: the
/// ids must be the same on every replica and after every restart).
const BASALTIC_NAME_IDS: uuid::Uuid =
    uuid::Uuid::from_u128(0x5b1e_7c3a_2f94_4d61_9a0e_c8b3_71f2_d406);

/// The basaltic id of the gateway queue `queue` when no basaltic alias names it: a name-based
/// UUID (version 5) of the queue's name, so a queue made through any API has one id everywhere.
pub fn derived_basaltic_id(queue: &str) -> String {
    uuid::Uuid::new_v5(&BASALTIC_NAME_IDS, queue.as_bytes())
        .hyphenated()
        .to_string()
}

/// Whether a tag key is the gateway's own (clients can neither see nor change those).
pub fn is_reserved_tag(key: &str) -> bool {
    key.get(..RESERVED_PREFIX.len())
        .is_some_and(|prefix| prefix.eq_ignore_ascii_case(RESERVED_PREFIX))
}

/// Refuses tag keys a client may not set or remove: the gateway's own.
pub fn check_client_tags<'k>(
    mut keys: impl Iterator<Item = &'k String>,
) -> Result<(), GatewayError> {
    match keys.find(|key| is_reserved_tag(key)) {
        Some(key) => Err(GatewayError::invalid_request(format!(
            "tag keys starting with `{RESERVED_PREFIX}` are reserved for the gateway (got `{}`)",
            key.escape_default()
        ))),
        None => Ok(()),
    }
}

fn valid_segment(segment: &str) -> bool {
    (1..=MAX_SEGMENT).contains(&segment.len())
        && segment
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~:@".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_out_and_read_back() {
        let alias = Alias::ezgh("acme", "shop", "orders-1").unwrap();
        assert_eq!(alias.written(), "ezgh/acme/shop/orders-1");
        assert_eq!(Alias::parse_written(&alias.written()), Some(alias.clone()));
        assert!(alias.is_under(Namespace::Ezgh, &["acme", "shop"]));
        assert!(!alias.is_under(Namespace::Ezgh, &["acme", "other"]));
        assert!(!alias.is_under(Namespace::Sombus, &[]));
        let key = alias.tag_key();
        assert!(key.starts_with(ALIAS_TAG_PREFIX) && key.len() == ALIAS_TAG_PREFIX.len() + 16);
    }

    #[test]
    fn refuses_what_cannot_be_written_back() {
        assert!(Alias::new(Namespace::Basaltic, ["a/b"]).is_err());
        assert!(Alias::new(Namespace::Basaltic, [""]).is_err());
        assert!(Alias::new(Namespace::Basaltic, ["a", "b"]).is_err());
        assert!(Alias::new(Namespace::Sombus, ["t", "c d"]).is_err());
        assert!(Alias::new(Namespace::Basaltic, ["x".repeat(MAX_SEGMENT + 1)]).is_err());
        assert!(
            Alias::new(
                Namespace::Ezgh,
                ["x".repeat(100), "y".repeat(100), "z".repeat(100)]
            )
            .is_err()
        );
        assert_eq!(Alias::parse_written("nope/x"), None);
        assert_eq!(Alias::parse_written("basaltic/a/b"), None);
        assert!(is_reserved_tag("SQSGW.alias.x") && !is_reserved_tag("team"));
    }
}
