//! What the CLI tests share: the `basaltic` and `ezgh` binaries, a shell line run against a running
//! gateway with its output and status, and the receipt handle a line prints.

pub const BASALTIC: &str = env!("CARGO_BIN_EXE_basaltic");

pub const EZGH: &str = env!("CARGO_BIN_EXE_ezgh");

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs a shell line in `dir` with `env` (tokio's process: the gateway runs on this thread).
pub async fn shell(dir: &std::path::Path, line: &str, env: &[(&str, &str)]) -> Run {
    let mut command = tokio::process::Command::new("bash");
    command.arg("-c").arg(line).current_dir(dir).env_clear();
    // Both binaries, by the names the documents use.
    let dirs = [BASALTIC, EZGH].map(|bin| {
        std::path::Path::new(bin)
            .parent()
            .unwrap()
            .display()
            .to_string()
    });
    command.env(
        "PATH",
        format!(
            "{}:{}:{}",
            dirs[0],
            dirs[1],
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().await.unwrap();
    Run {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub fn handle_in(text: &str) -> String {
    text.lines()
        .find_map(|line| line.trim().strip_prefix("receipt handle: "))
        .expect("a receipt handle is printed")
        .to_owned()
}
