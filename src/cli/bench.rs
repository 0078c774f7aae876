//! `sqs-gateway bench`: the bench is a binary of its own (`sqs-gateway-bench`, built beside this
//! one), so the product carries none of it; this command runs it with the arguments given.

use std::path::PathBuf;
use std::process::ExitCode;

/// The bench binary's name.
const BENCH: &str = "sqs-gateway-bench";

/// Runs `sqs-gateway-bench` from this binary's directory with `args`, and exits as it does.
pub(crate) fn hand_over(args: &[String]) -> ExitCode {
    let Some(bench) = beside_this_binary() else {
        eprintln!(
            "{BENCH} is not beside this binary: build it with `cargo build --release` (or `--bin {BENCH}`)"
        );
        return ExitCode::from(super::EXIT_RUNTIME);
    };
    match std::process::Command::new(&bench).args(args).status() {
        Ok(status) => match status.code() {
            Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            None => ExitCode::from(super::EXIT_RUNTIME),
        },
        Err(error) => {
            eprintln!("cannot run {}: {error}", bench.display());
            ExitCode::from(super::EXIT_RUNTIME)
        }
    }
}

fn beside_this_binary() -> Option<PathBuf> {
    let bench = std::env::current_exe().ok()?.parent()?.join(BENCH);
    bench.exists().then_some(bench)
}
