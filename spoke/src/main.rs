//! `fleetgate-spoke`: parse the configuration, set up logging, run the spoke
//! until SIGTERM/SIGINT, then shut down gracefully.
// Denied, not forbidden: the one exception is `MALLOC_CONF`'s exported symbol.
#![deny(unsafe_code)]

use clap::Parser;
use fleetgate_spoke::{Config, Spoke, config::LogFormat, kube_client};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::{filter::Targets, layer::SubscriberExt, util::SubscriberInitExt};

/// The log filter without `RUST_LOG` (or with one that does not parse).
const DEFAULT_LOG: &str = "info,kube=warn,tower=warn,h2=warn";

/// Logs filtered by `RUST_LOG` as targets and levels (`info,fleetgate_spoke=debug`):
/// `Targets` rather than `EnvFilter`, whose span and field filters the spoke
/// does not need (0.2 MB less code in the image's build, docs/performance.md).
fn init_tracing(format: LogFormat) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|s| s.parse::<Targets>().ok())
        .unwrap_or_else(|| DEFAULT_LOG.parse().expect("the default log filter parses"));
    let builder = tracing_subscriber::fmt();
    match format {
        LogFormat::Json => builder.json().finish().with(filter).init(),
        LogFormat::Text => builder.finish().with(filter).init(),
    }
}

/// Any panic ends the process, whatever the build profile (the image's,
/// `dist-spoke`, aborts on panic anyway). With unwinding, a panicking task
/// would end alone: the watch, the reconcile loop or the hub connection would
/// stop while `/healthz` stays green, and the spoke would silently stop
/// enforcing. Ended, the container restarts (its restart count shows it), the
/// hub sees the stream end, and the new process enforces the persisted
/// snapshot from the start. The objects it suspended stay suspended meanwhile.
fn exit_on_panic() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        tracing::error!(panic = %info, "panic: the spoke exits to restart whole");
        std::process::abort();
    }));
}

async fn shutdown_signal(token: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
    tracing::info!("shutting down");
    token.cancel();
}

/// jemalloc, configured in `.cargo/config.toml` to hand freed pages back to
/// the OS within about a second: after the initial list and suspend of 1,000
/// objects the spoke idles at ~2.8 MiB less RSS than with jemalloc's defaults
/// (fleetgate-bench).
///
/// Feature `system-alloc` builds the spoke with the system allocator instead,
/// so heap profilers that interpose `malloc` (heaptrack, massif) see every
/// allocation: `bench/scripts/spoke_heap.sh`.
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The spoke's own jemalloc options, read after the built-in ones of
/// `.cargo/config.toml` (so these win) and before `_RJEM_MALLOC_CONF`, which
/// still overrides them at run time. Freed pages go back to the OS at once
/// and no thread keeps a cache of freed small objects: the spoke allocates in
/// bursts (the initial list, a report) and then idles. Governing 1,000 Flux
/// objects against a hub (`dist-spoke`, fleetgate-bench, one run each):
/// 18.1 MiB RSS with the built-in options only, 17.4 with the decays at 0,
/// 16.4 with the thread cache off too; `narenas:1` changed nothing. Idle CPU
/// 0–2 millicores in every run; the thread cache off costs CPU while the
/// spoke allocates (0.27 against 0.18 s over its start, one run each;
/// docs/performance.md, spoke memory).
#[cfg(not(feature = "system-alloc"))]
#[allow(unsafe_code)] // a symbol name jemalloc reads; nothing else has it
#[unsafe(export_name = "_rjem_malloc_conf")]
pub static MALLOC_CONF: &[u8; 47] = b"tcache:false,dirty_decay_ms:0,muzzy_decay_ms:0\0";

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    exit_on_panic();
    let config = Config::parse();
    init_tracing(config.log_format);
    let client = kube_client(&config).await?;
    let shutdown = CancellationToken::new();
    tokio::spawn(shutdown_signal(shutdown.clone()));
    let spoke = Spoke::start(client, config, shutdown).await?;
    tracing::info!(http = %spoke.http_addr, "fleetgate-spoke running");
    spoke.join().await;
    Ok(())
}
