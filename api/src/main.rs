//! The `shardgate` binary: parse the command line, run it.

use clap::Parser;

/// mimalloc: measurably faster than the system allocator for the many small per-request
/// allocations of the HTTP stack (see bench/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match shardgate_api::startup::cli::Cli::parse().run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
