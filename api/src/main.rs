//! The `shardgate` binary: parse the command line, run it.

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match shardgate_api::cli::Cli::parse().run().await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
