//! The `sqs-gateway` binary: its command line is in `cli`.

mod cli;

fn main() -> std::process::ExitCode {
    cli::run()
}
