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
            // `shardgate admin` tells a refused request from a failed gateway by its exit code.
            e.downcast_ref::<shardgate_api::cli::Failure>()
                .map_or(std::process::ExitCode::FAILURE, shardgate_api::cli::Failure::exit_code)
        }
    }
}
