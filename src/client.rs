//! What the documented command-line clients (`basaltic`, `ezgh`, and `sqs-gateway sombus`) share:
//! one HTTP call to the gateway with a Bearer key, the answer or the API's error (its code and
//! message), and the exit codes (1 for a refused or failed request; 2 for a command that can't be
//! made, as clap's usage errors); where a key is read from (never best from the command line), what
//! text may reach a terminal, and the shell completions.

use serde_json::Value;
use std::borrow::Cow;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// Exit code of a request the API refused, or that failed on its way.
pub const EXIT_REFUSED: u8 = 1;
/// Exit code of a command that can't be made as given (as clap's for bad arguments).
pub const EXIT_USAGE: u8 = 2;
/// Longer than the longest long poll (20 s) plus the gateway's own deadline.
const TIMEOUT: Duration = Duration::from_secs(70);

/// A client of one gateway, with one key.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    endpoint: String,
    /// `None` for routes that take no credential (ezgh's receipt routes).
    key: Option<String>,
}

/// Why a call did not succeed.
#[derive(Debug)]
pub enum Failure {
    /// The API answered an error.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The API's error code.
        code: String,
        /// Its message.
        message: String,
    },
    /// No answer (connection refused, timeout) or one that is not the API's.
    Transport(String),
    /// The command can't be made as given (no key, an unreadable request file): exit 2.
    Usage(String),
    /// Standard output was closed by its reader (`| head -1`): the command stops there, quietly,
    /// with the exit status of a tool stopped by SIGPIPE.
    StdoutClosed,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused {
                status,
                code,
                message,
            } => write!(f, "{code}: {message} (HTTP {status})"),
            Failure::Transport(detail) | Failure::Usage(detail) => write!(f, "{detail}"),
            Failure::StdoutClosed => write!(f, "standard output was closed"),
        }
    }
}

impl Failure {
    /// Prints the failure (its controls escaped: the API's message may quote what a caller sent)
    /// and answers the exit code.
    pub fn exit(&self) -> ExitCode {
        if let Failure::StdoutClosed = self {
            return ExitCode::from(EXIT_STDOUT_CLOSED);
        }
        eprintln!("error: {}", printable(&self.to_string()));
        match self {
            Failure::Usage(_) => ExitCode::from(EXIT_USAGE),
            _ => ExitCode::from(EXIT_REFUSED),
        }
    }
}

/// Exit code when standard output's reader went away: 128 + SIGPIPE, as a shell reports a tool
/// the signal stopped.
pub const EXIT_STDOUT_CLOSED: u8 = 141;

/// Writes one line on standard output (flushed, so a closed pipe shows before anything that
/// should follow what was printed, such as an acknowledgement). A reader that has gone is
/// [`Failure::StdoutClosed`], never a panic as with `println!`.
pub fn say(line: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(line)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::StdoutClosed),
        Err(error) => Err(Failure::Transport(format!(
            "cannot write to standard output: {error}"
        ))),
    }
}

/// `println!` for the command-line clients: [`say`] with `format!` arguments, answering its
/// `Result`.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::client::say(format_args!($($arg)*))
    };
}

/// The names a received message's fields have in an API's answers.
#[derive(Debug, Clone, Copy)]
pub struct MessageFields {
    /// The message id's (`messageId`, `message_id`).
    pub id: &'static str,
    /// The receive count's.
    pub receive_count: &'static str,
}

/// Prints what every received message shows, its controls escaped (a producer's text would
/// drive the terminal): its id and receive count (then `more` on that line), its body and its
/// attributes.
pub fn say_message(
    message: &serde_json::Value,
    fields: MessageFields,
    more: &str,
) -> Result<(), Failure> {
    say(format_args!(
        "message {}  receive count {}{more}",
        printable(message[fields.id].as_str().unwrap_or("?")),
        printable(&message[fields.receive_count].to_string())
    ))?;
    say(format_args!(
        "  body: {}",
        printable(message["body"].as_str().unwrap_or(""))
    ))?;
    if let Some(attributes) = message["attributes"].as_object()
        && !attributes.is_empty()
    {
        // JSON escapes C0 controls but not C1 (U+0080–U+009F) nor the others.
        say(format_args!(
            "  attributes: {}",
            printable(&serde_json::Value::Object(attributes.clone()).to_string())
        ))?;
    }
    Ok(())
}

/// Why a request got no answer, from the outermost error to its root cause (`error sending
/// request: client error (Connect): invalid peer certificate: UnknownIssuer`), each told once.
fn cause_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut told: Vec<String> = Vec::new();
    let mut next = Some(error);
    while let Some(error) = next {
        let text = error.to_string();
        if !told.iter().any(|earlier| earlier.contains(&text)) {
            told.push(text);
        }
        next = error.source();
    }
    told.join(": ")
}

/// A PEM file's certificates, for a client that should trust a private CA besides the system's
/// roots (`--cacert`; `SSL_CERT_FILE` replaces the system's roots instead).
fn extra_roots(path: &Path) -> Result<Vec<reqwest::Certificate>, Failure> {
    let pem = std::fs::read(path)
        .map_err(|error| Failure::Usage(format!("--cacert {}: {error}", path.display())))?;
    let roots = reqwest::Certificate::from_pem_bundle(&pem).map_err(|_| {
        Failure::Usage(format!(
            "--cacert {}: not a PEM file of certificates",
            path.display()
        ))
    })?;
    if roots.is_empty() {
        return Err(Failure::Usage(format!(
            "--cacert {}: no certificate in the file",
            path.display()
        )));
    }
    Ok(roots)
}

impl Client {
    /// A client of the gateway at `endpoint` with the Bearer `key` (none: no `Authorization`),
    /// trusting the system's roots and those of the PEM file `cacert`.
    pub fn new(endpoint: &str, key: Option<&str>, cacert: Option<&Path>) -> Result<Self, Failure> {
        let mut builder = reqwest::Client::builder().timeout(TIMEOUT);
        if let Some(path) = cacert {
            for root in extra_roots(path)? {
                builder = builder.add_root_certificate(root);
            }
        }
        let http = builder
            .build()
            .map_err(|error| Failure::Transport(cause_chain(&error)))?;
        Ok(Self {
            http,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            key: key.map(str::to_owned),
        })
    }

    /// One call; the answer's JSON (`null` for an empty answer).
    pub async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Value, Failure> {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.endpoint));
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        // Without the URL: a query string may carry a receipt handle; and the endpoint without
        // its `user:password@`.
        let response = request.send().await.map_err(|error| {
            Failure::Transport(format!(
                "cannot reach {}: {}",
                without_userinfo(&self.endpoint),
                cause_chain(&error.without_url())
            ))
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| Failure::Transport(cause_chain(&error.without_url())))?;
        let answer: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).map_err(|_| {
                Failure::Transport(format!("an answer that is not JSON (HTTP {status})"))
            })?
        };
        if status.is_success() {
            return Ok(answer);
        }
        // basaltic: {"error": {"code", "message"}}; ezgh: {"error": code, "message"}; the sombus
        // admin API: {"violations": [{"rule", "message"}]}.
        let (code, message) = match (&answer["error"], &answer["violations"][0]) {
            (Value::Object(error), _) => (&error["code"], &error["message"]),
            (Value::Null, violation @ Value::Object(_)) => {
                (&violation["rule"], &violation["message"])
            }
            (code, _) => (code, &answer["message"]),
        };
        Err(Failure::Refused {
            status: status.as_u16(),
            code: code.as_str().unwrap_or("unknown").to_owned(),
            message: message.as_str().unwrap_or("").to_owned(),
        })
    }
}

/// How a command prints its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// For people.
    Text,
    /// The API's JSON, for scripts.
    Json,
}

/// `url` as it may be printed: without the `user:password@` of its authority (an endpoint may carry
/// credentials for a proxy in front of the gateway).
pub fn without_userinfo(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://") else {
        return Cow::Borrowed(url);
    };
    let authority_start = scheme_end + "://".len();
    let authority_end = url[authority_start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |end| authority_start + end);
    match url[authority_start..authority_end].rfind('@') {
        Some(at) => Cow::Owned(format!(
            "{}{}",
            &url[..authority_start],
            &url[authority_start + at + 1..]
        )),
        None => Cow::Borrowed(url),
    }
}

/// Text from the gateway (a message's body, attributes, names, error messages) as it may reach a
/// terminal: every control character (C0, DEL, C1 such as the 8-bit CSI U+009B), the line and
/// paragraph separators and the bidirectional-text controls are written as `\u{9b}`, newline and
/// carriage return as `\n` and `\r`; the tab stays (it moves the cursor right and nothing else).
/// A newline is escaped too: the text output is one field a line, and a body's newline could
/// otherwise print a line of its own (a fake `receipt handle:`). JSON output is never passed
/// through this: it stays the API's exact answer.
pub fn printable(text: &str) -> Cow<'_, str> {
    fn escaped(c: char) -> bool {
        c != '\t'
            && (c.is_control()
                || matches!(
                    c,
                    '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
                )
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c))
    }
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if escaped(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Where a CLI reads a secret (an API key, an admin key, an SQS secret) from.
#[derive(Debug, Clone, Copy)]
pub struct SecretSource {
    /// The flag that takes the secret itself (`--api-key`): kept for compatibility, with a
    /// warning, since every local user can read a process's command line.
    pub flag: &'static str,
    /// The flag that takes a file holding it (`--api-key-file`).
    pub file_flag: &'static str,
    /// The environment variable holding it (`EZGH_API_KEY`).
    pub env: &'static str,
}

impl SecretSource {
    /// The secret: the flag's value (with a warning on stderr), else the file's first line (with
    /// a warning when other users may read the file), else the environment's value; `None` when
    /// none is given. An empty value counts as none; an unreadable or empty file is a usage error.
    pub fn read(
        &self,
        flag_value: Option<&str>,
        file: Option<&Path>,
    ) -> Result<Option<String>, Failure> {
        if let Some(value) = flag_value {
            eprintln!(
                "warning: {} puts the secret in the process list (ps, /proc/PID/cmdline), where \
                 every local user can read it, and in the shell's history; set {} or use {} PATH",
                self.flag, self.env, self.file_flag
            );
            if !value.is_empty() {
                return Ok(Some(value.to_owned()));
            }
        }
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|error| {
                Failure::Usage(format!("{} {}: {error}", self.file_flag, path.display()))
            })?;
            warn_if_shared(path);
            let secret = text.lines().next().unwrap_or("").trim();
            if secret.is_empty() {
                return Err(Failure::Usage(format!(
                    "{} {}: the file's first line is empty",
                    self.file_flag,
                    path.display()
                )));
            }
            return Ok(Some(secret.to_owned()));
        }
        Ok(std::env::var(self.env)
            .ok()
            .filter(|value| !value.is_empty()))
    }
}

/// Warns on stderr when the file at `path`, which holds a secret, is open to its group or to
/// other users (any of the mode's bits 0o077, as ssh judges a private key).
pub fn warn_if_shared(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        if let Ok(metadata) = std::fs::metadata(path) {
            let mode = metadata.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                eprintln!(
                    "warning: {} holds a secret and other users may read it (mode {mode:04o}); \
                     chmod 600 {}",
                    path.display(),
                    path.display()
                );
            }
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// The shell to print completions for: `sqs-gateway|ezgh|basaltic completions <SHELL>`.
pub type Shell = clap_complete::Shell;

/// Prints `command`'s completion script for `shell` on stdout (install it where the shell reads
/// completions, e.g. `ezgh completions bash > ~/.local/share/bash-completion/completions/ezgh`).
pub fn print_completions(shell: Shell, command: &mut clap::Command) {
    let name = command.get_name().to_owned();
    clap_complete::generate(shell, command, name, &mut std::io::stdout());
}

#[cfg(test)]
mod tests {
    use super::{printable, without_userinfo};

    #[test]
    fn userinfo_is_never_printed() {
        assert_eq!(
            without_userinfo("http://user:pw@127.0.0.1:1/x?a=b@c"),
            "http://127.0.0.1:1/x?a=b@c"
        );
        assert_eq!(without_userinfo("https://a@b@host"), "https://host");
        assert_eq!(
            without_userinfo("http://127.0.0.1:8787"),
            "http://127.0.0.1:8787"
        );
        assert_eq!(without_userinfo("not a url"), "not a url");
    }

    #[test]
    fn controls_are_escaped_and_text_is_kept() {
        assert_eq!(
            printable("invoice paid\u{9b}2J\u{1b}[31mFAKE\u{7f}"),
            "invoice paid\\u{9b}2J\\u{1b}[31mFAKE\\u{7f}"
        );
        assert_eq!(printable("a\nb\rc\td"), "a\\nb\\rc\td");
        assert_eq!(printable("\u{202e}abc"), "\\u{202e}abc");
        assert_eq!(
            printable("{\"order_id\":\"A-1001\"} é ✓"),
            "{\"order_id\":\"A-1001\"} é ✓"
        );
    }
}
