//! The `sqs-gateway` binary: its command line is in `cli`.

mod cli;

/// jemalloc, not the C library's malloc: requests allocate on one thread and free on another,
/// which glibc's arenas serve with locks and consolidation (CONTRIBUTING.md).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    cli::run()
}
