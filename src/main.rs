//! The `sqs-gateway` binary: its command line is in `cli`.

mod cli;

/// mimalloc instead of the system allocator: per-request allocations (hyper, axum, serde,
/// tracing) cost a fifth of an ezgh request's CPU under glibc's malloc (perf, issue 12). Its
/// default commits arenas eagerly on Linux, which costs idle connections memory: the README's
/// sizing notes give `MIMALLOC_ARENA_EAGER_COMMIT=0` for gateways holding many long polls.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::run()
}
