//! `fleetgate-hub`: thin entry point — parse configuration, set up logging,
//! turn SIGTERM/SIGINT into a cancellation, run the command.
// Denied, not forbidden: the one exception is `MALLOC_CONF`'s exported symbol.
#![deny(unsafe_code)]

use clap::Parser;
use fleetgate_hub::config::{Cli, Command};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::EnvFilter;

/// jemalloc instead of glibc malloc: with 10,000 spoke streams glibc's
/// malloc/free (cross-thread frees, consolidation) was a third of the hub's
/// CPU during a fleet-wide fan-out (perf, fleetgate-bench); jemalloc took the
/// 10,000-spoke flip p99 from ~300 to ~210 ms at the same RSS per spoke
/// (mimalloc was as fast but used ~40% more memory per connection).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The hub's own jemalloc options, read after the built-in ones of
/// `.cargo/config.toml` (so these win) and before `_RJEM_MALLOC_CONF`, which
/// still overrides them at run time: freed pages go back to the OS at once.
/// With a decay time (1,000 ms built in; 100 ms kept them too) the pages freed
/// after 10,000 spokes connected (sign-ins, first snapshot reads, connection
/// writes) were still resident while the hub idled: ~5 KiB per connected spoke,
/// most of its excess over a bare tonic server holding the same streams
/// (fleetgate-bench, three pairs of runs: 31.0-31.6 -> 26.2 KiB per spoke
/// against a floor of 24.8-24.9; the status ingest ~7 % slower over four
/// same-run pairs, docs/performance.md, "Memory per connected spoke against
/// its floor").
/// The thread caches stay on: the fan-out to every stream allocates on each
/// worker thread.
#[allow(unsafe_code)] // a symbol name jemalloc reads; nothing else has it
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: &[u8; 34] = b"dirty_decay_ms:0,muzzy_decay_ms:0\0";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    fleetgate_hub::build_info::set_commit(env!("FLEETGATE_COMMIT"));
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        Command::Migrate(c) => {
            let pool = fleetgate_hub::db::connect(&c.database_url, 2).await?;
            fleetgate_hub::db::migrate(&pool).await?;
            tracing::info!("migrations applied");
        }
        Command::Serve(c) => {
            let shutdown = CancellationToken::new();
            tokio::spawn(cancel_on_signal(shutdown.clone()));
            let drained = fleetgate_hub::serve_drained(c, shutdown).await?;
            // Drained: reports flushed, connection state cleared, lease ended. Exit now
            // instead of freeing the replica's state and every connection's task one by
            // one (0.05–0.3 s with 10,000 spokes, while a single replica's fleet waits).
            drained.leak();
            std::process::exit(0);
        }
    }
    Ok(())
}

/// Cancels `token` on SIGTERM or SIGINT.
async fn cancel_on_signal(token: CancellationToken) {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
    tracing::info!("shutdown requested; draining");
    token.cancel();
}
