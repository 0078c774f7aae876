//! `.dockerignore` with Docker's matching rules: which files of the repository a build's context
//! holds.

/// The patterns of a .dockerignore: the last one matching a path (or one of its parent
/// directories) decides, `!` re-includes; `*` and `?` within a path segment, `**` across segments.
pub(crate) struct DockerIgnore {
    pub(crate) rules: Vec<(bool, Vec<String>)>,
}

impl DockerIgnore {
    pub(crate) fn parse(text: &str) -> Self {
        let rules = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| {
                let (exclude, pattern) = match line.strip_prefix('!') {
                    Some(pattern) => (false, pattern.trim()),
                    None => (true, line),
                };
                assert!(
                    !pattern.contains(['[', '\\']),
                    "character classes and escapes are beyond this test's matcher: {pattern}"
                );
                let segments = pattern
                    .split('/')
                    .filter(|segment| !segment.is_empty() && *segment != ".")
                    .map(str::to_owned)
                    .collect();
                (exclude, segments)
            })
            .collect();
        Self { rules }
    }

    pub(crate) fn excludes(&self, path: &str) -> bool {
        let parts: Vec<&str> = path
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .collect();
        let mut excluded = false;
        for (exclude, pattern) in &self.rules {
            if (1..=parts.len()).any(|depth| segments_match(pattern, &parts[..depth])) {
                excluded = *exclude;
            }
        }
        excluded
    }
}

pub(crate) fn segments_match(pattern: &[String], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((first, rest)) if first == "**" => {
            (0..=path.len()).any(|skip| segments_match(rest, &path[skip..]))
        }
        Some((first, rest)) => path.split_first().is_some_and(|(segment, tail)| {
            segment_matches(first.as_bytes(), segment.as_bytes()) && segments_match(rest, tail)
        }),
    }
}

pub(crate) fn segment_matches(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| segment_matches(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && segment_matches(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && segment_matches(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dockerignore_matcher_follows_dockers_rules() {
        let ignore = DockerIgnore::parse("# c\n*\n!src\n**/*.bak\n/docs/?.md\n!keep/**\n");
        assert!(ignore.excludes("target"));
        assert!(ignore.excludes("target/release/sqs-gateway"));
        assert!(!ignore.excludes("src"));
        assert!(!ignore.excludes("src/cli/mod.rs"));
        assert!(ignore.excludes("src/cli/old.rs.bak"));
        assert!(ignore.excludes("docs/a.md"));
        assert!(!ignore.excludes("keep/x/y"));
        let narrow = DockerIgnore::parse("target\n");
        assert!(narrow.excludes("target/debug"));
        assert!(!narrow.excludes("src/target.rs"));
        assert!(!narrow.excludes("a/target"));
    }
}
