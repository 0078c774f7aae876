//! The Dockerfile read as Docker reads it: instructions with their continuations joined, exec
//! and shell forms, build stages, and what the runtime stage says the container runs.

use super::repo_file;
use std::collections::BTreeMap;

/// One Dockerfile instruction, its line continuations joined.
#[derive(Debug, Clone)]
pub(crate) struct Instruction {
    pub(crate) keyword: String,
    pub(crate) args: String,
    pub(crate) line: usize,
}

impl Instruction {
    /// The `--name=value` options before the arguments, and the arguments after them.
    pub(crate) fn options(&self) -> (BTreeMap<String, String>, &str) {
        let mut options = BTreeMap::new();
        let mut rest = self.args.as_str();
        while let Some(option) = rest.strip_prefix("--") {
            let end = option.find(char::is_whitespace).unwrap_or(option.len());
            let (name, value) = option[..end]
                .split_once('=')
                .unwrap_or((&option[..end], ""));
            options.insert(name.to_owned(), value.to_owned());
            rest = option[end..].trim_start();
        }
        (options, rest)
    }

    /// The arguments without options, as a list: the exec form's JSON array, else shell words.
    pub(crate) fn words(&self) -> Vec<String> {
        let (_, rest) = self.options();
        if rest.starts_with('[') {
            exec_form(rest, self.line)
        } else {
            shell_words(rest)
        }
    }
}

/// Splits a Dockerfile into instructions: comments (parser directives included) dropped, lines
/// ending in `\` joined with the next, comment and blank lines inside a continuation skipped.
pub(crate) fn instructions(text: &str) -> Vec<Instruction> {
    let mut parsed = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (start, mut joined) = pending.take().unwrap_or((index + 1, String::new()));
        if let Some(body) = line.strip_suffix('\\') {
            joined.push_str(body.trim_end());
            joined.push(' ');
            pending = Some((start, joined));
            continue;
        }
        joined.push_str(line);
        let (keyword, args) = joined
            .split_once(char::is_whitespace)
            .unwrap_or((joined.as_str(), ""));
        parsed.push(Instruction {
            keyword: keyword.to_ascii_uppercase(),
            args: args.trim().to_owned(),
            line: start,
        });
    }
    assert!(
        pending.is_none(),
        "the Dockerfile ends inside a line continuation"
    );
    parsed
}

/// An exec-form argument list: a JSON array of strings.
pub(crate) fn exec_form(text: &str, line: usize) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_else(|error| {
        panic!("line {line}: not a JSON array of strings ({error}): {text}")
    })
}

/// Whitespace-separated words; double quotes group (and are removed).
pub(crate) fn shell_words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut in_word = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// A build stage: `FROM base [AS name]` and what follows it.
#[derive(Debug)]
pub(crate) struct Stage {
    pub(crate) base: String,
    pub(crate) name: Option<String>,
    pub(crate) body: Vec<Instruction>,
}

impl Stage {
    pub(crate) fn all(&self, keyword: &'static str) -> impl Iterator<Item = &Instruction> {
        self.body.iter().filter(move |i| i.keyword == keyword)
    }

    /// The instruction that counts (the last one of its kind).
    pub(crate) fn last(&self, keyword: &'static str) -> Option<&Instruction> {
        self.all(keyword).last()
    }
}

/// The Dockerfile as stages, and what the runtime (last) stage says the container runs.
pub(crate) struct Dockerfile {
    pub(crate) stages: Vec<Stage>,
}

impl Dockerfile {
    pub(crate) fn load() -> Self {
        let mut stages: Vec<Stage> = Vec::new();
        for instruction in instructions(&repo_file("Dockerfile")) {
            if instruction.keyword == "FROM" {
                let (_, rest) = instruction.options();
                let words = shell_words(rest);
                let name = match words.as_slice() {
                    [_] => None,
                    [_, as_, name] if as_.eq_ignore_ascii_case("as") => Some(name.clone()),
                    _ => panic!("line {}: FROM {}", instruction.line, instruction.args),
                };
                stages.push(Stage {
                    base: words[0].clone(),
                    name,
                    body: Vec::new(),
                });
            } else {
                stages
                    .last_mut()
                    .unwrap_or_else(|| panic!("line {}: before FROM", instruction.line))
                    .body
                    .push(instruction);
            }
        }
        Self { stages }
    }

    pub(crate) fn runtime(&self) -> &Stage {
        self.stages.last().expect("a FROM")
    }

    pub(crate) fn stage_named(&self, name: &str) -> &Stage {
        self.stages
            .iter()
            .find(|stage| stage.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("no stage named {name}"))
    }

    /// The runtime stage's `COPY --from=STAGE SOURCE DEST`: the stage, the source, the dest.
    pub(crate) fn copied_binary(&self) -> (&Stage, String, String) {
        let copy = self
            .runtime()
            .all("COPY")
            .find(|copy| copy.options().0.contains_key("from"))
            .expect("the runtime stage copies the binary from the build stage");
        let from = copy.options().0["from"].clone();
        let words = copy.words();
        assert_eq!(words.len(), 2, "line {}: one file copied", copy.line);
        (self.stage_named(&from), words[0].clone(), words[1].clone())
    }

    /// The ENV of the runtime stage, `K=V …` and `K V` forms.
    pub(crate) fn env(&self) -> BTreeMap<String, String> {
        let mut env = BTreeMap::new();
        for instruction in self.runtime().all("ENV") {
            let words = shell_words(&instruction.args);
            if words.first().is_some_and(|word| word.contains('=')) {
                for word in words {
                    let (key, value) = word
                        .split_once('=')
                        .unwrap_or_else(|| panic!("line {}: {word}", instruction.line));
                    env.insert(key.to_owned(), value.to_owned());
                }
            } else if let Some((key, value)) = instruction.args.split_once(char::is_whitespace) {
                env.insert(key.to_owned(), value.trim().to_owned());
            }
        }
        env
    }

    /// ENTRYPOINT followed by CMD, both of which must be in exec form.
    pub(crate) fn command(&self) -> Vec<String> {
        let mut command = Vec::new();
        for keyword in ["ENTRYPOINT", "CMD"] {
            let instruction = self
                .runtime()
                .last(keyword)
                .unwrap_or_else(|| panic!("the runtime stage sets {keyword}"));
            // The shell form would run `/bin/sh -c`, and SIGTERM would stop the shell, not the gateway.
            assert!(
                instruction.args.starts_with('['),
                "line {}: {keyword} in exec form",
                instruction.line
            );
            command.extend(instruction.words());
        }
        command
    }

    /// The HEALTHCHECK's command (after `CMD`), in exec form.
    pub(crate) fn healthcheck(&self) -> Vec<String> {
        let instruction = self.runtime().last("HEALTHCHECK").expect("a HEALTHCHECK");
        let (_, rest) = instruction.options();
        let command = rest
            .strip_prefix("CMD")
            .unwrap_or_else(|| panic!("line {}: HEALTHCHECK CMD …", instruction.line))
            .trim();
        assert!(command.starts_with('['), "HEALTHCHECK CMD in exec form");
        exec_form(command, instruction.line)
    }

    pub(crate) fn exposed_port(&self) -> u16 {
        let words = self.runtime().last("EXPOSE").expect("EXPOSE").words();
        assert_eq!(words.len(), 1, "one exposed port: {words:?}");
        let port = words[0].strip_suffix("/tcp").unwrap_or(&words[0]);
        port.parse().expect("EXPOSE PORT")
    }

    pub(crate) fn volume(&self) -> String {
        let words = self.runtime().last("VOLUME").expect("VOLUME").words();
        assert_eq!(words.len(), 1, "one volume: {words:?}");
        words[0].clone()
    }
}

/// `--flag VALUE` or `--flag=VALUE` in an argument list.
pub(crate) fn flag_value(argv: &[String], flag: &str) -> Option<String> {
    argv.iter().enumerate().find_map(|(index, arg)| {
        if arg == flag {
            argv.get(index + 1).cloned()
        } else {
            arg.strip_prefix(flag)
                .and_then(|rest| rest.strip_prefix('='))
                .map(str::to_owned)
        }
    })
}

/// The URL the health check requests (the probe's default when it names none).
pub(crate) fn healthcheck_url(healthcheck: &[String]) -> String {
    flag_value(healthcheck, "--url").unwrap_or_else(|| "http://127.0.0.1:8787/healthz".into())
}

/// `http://host:port/path` → (host, port, path).
pub(crate) fn url_parts(url: &str) -> (String, u16, String) {
    let rest = url.strip_prefix("http://").expect("an http:// URL");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (host, port) = authority.rsplit_once(':').expect("a URL with a port");
    (
        host.to_owned(),
        port.parse().expect("a port"),
        path.to_owned(),
    )
}
