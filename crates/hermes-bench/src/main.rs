//! `cargo xtask bench`: shaping cost against the serialisation floor on the standard history.
//!
//! For each route and size: the median time to shape and serialise the request body, the median
//! time to serialise the already-shaped body alone, their ratio (with its spread over the runs),
//! and the peak heap of the shaping step divided by the history's JSON size. Everything runs in
//! one process, side by side, so the ratios cancel the machine's speed.

use std::time::Duration;

use hermes_bench::{FINGERPRINTS, median, sample, sha256_hex, standard_history_bytes};
use hermes_core::{ChatRequest, Message, ResolveOptions, RouteTarget, ThinkingRequest, Verdicts};
use peak_alloc::PeakAlloc;

#[global_allocator]
static ALLOC: PeakAlloc = PeakAlloc;

/// (label, provider, model) of the routes measured; the models are chosen so each route shows
/// its own behaviour (must-echo on deepseek, every carrier on openrouter, none on mistral).
const ROUTES: [(&str, &str, &str); 3] = [
    ("deepseek", "deepseek", "deepseek-v4-pro"),
    ("openrouter", "openrouter", "anthropic/claude-sonnet-5"),
    ("mistral", "mistral", "magistral-medium-latest"),
];

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn runs_for(n: usize) -> usize {
    match n {
        0..=100 => 41,
        101..=1000 => 15,
        _ => 7,
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sizes: Vec<usize> = if args.is_empty() {
        FINGERPRINTS.iter().map(|f| f.0).collect()
    } else {
        args.iter().filter_map(|a| a.parse().ok()).collect()
    };
    let table = hermes_providers::builtin_table();

    println!("shaping cost on the standard history (shared/bench), medians in one process");
    println!(
        "{:<11} {:>5} {:>13} {:>13} {:>7} {:>15} {:>16}",
        "route", "N", "shape+ser ms", "ser alone ms", "ratio", "ratio spread", "peak/JSON size"
    );
    for n in sizes {
        let bytes = standard_history_bytes(n);
        let fingerprint = FINGERPRINTS.iter().find(|f| f.0 == n);
        let sha = sha256_hex(&bytes);
        let matches = fingerprint.map_or("no published fingerprint".to_owned(), |f| {
            if f.1 == bytes.len() && f.2 == sha {
                "matches the Python generator".to_owned()
            } else {
                "MISMATCH".to_owned()
            }
        });
        println!("-- N={n}: {} bytes, sha256 {sha} ({matches})", bytes.len());
        let history: Vec<Message> = match serde_json::from_slice(&bytes) {
            Ok(h) => h,
            Err(e) => {
                eprintln!("standard history does not parse: {e}");
                std::process::exit(1);
            }
        };
        drop(bytes);
        let json_size = serde_json::to_vec(&history).map(|v| v.len()).unwrap_or(1);
        let runs = runs_for(n);
        let verdicts = Verdicts::default();
        for (label, provider, model) in ROUTES {
            let decision = table.resolve(
                &RouteTarget::new(provider, None, model),
                ResolveOptions::default(),
            );
            let thinking = ThinkingRequest::NoPreference;
            let body_len = serde_json::to_vec(&ChatRequest::build(
                &history, &decision, &verdicts, thinking,
            ))
            .map(|v| v.len())
            .unwrap_or(0);

            // Interleave the two measurements run by run so drift affects both alike.
            let shaped = ChatRequest::build(&history, &decision, &verdicts, thinking);
            let mut both = Vec::with_capacity(runs);
            let mut alone = Vec::with_capacity(runs);
            for _ in 0..runs {
                both.extend(sample(1, || {
                    let body = ChatRequest::build(&history, &decision, &verdicts, thinking);
                    let mut out = Vec::with_capacity(body_len);
                    serde_json::to_writer(&mut out, &body).map(|_| out.len())
                }));
                alone.extend(sample(1, || {
                    let mut out = Vec::with_capacity(body_len);
                    serde_json::to_writer(&mut out, &shaped).map(|_| out.len())
                }));
            }
            both.sort();
            alone.sort();
            let ratios: Vec<f64> = both
                .iter()
                .zip(&alone)
                .map(|(b, a)| b.as_secs_f64() / a.as_secs_f64())
                .collect();
            let ratio = ms(median(&both)) / ms(median(&alone));
            let (lo, hi) = (
                ratios.iter().copied().fold(f64::INFINITY, f64::min),
                ratios.iter().copied().fold(0.0, f64::max),
            );

            // Peak heap of the shaping step alone.
            let before = ALLOC.current_usage();
            ALLOC.reset_peak_usage();
            let body = ChatRequest::build(&history, &decision, &verdicts, thinking);
            let peak = ALLOC.peak_usage().saturating_sub(before);
            drop(body);

            println!(
                "{label:<11} {n:>5} {:>13.3} {:>13.3} {ratio:>7.3} {:>15} {:>16.5}",
                ms(median(&both)),
                ms(median(&alone)),
                format!("{lo:.2}-{hi:.2}"),
                peak as f64 / json_size as f64,
            );
        }
    }
    println!(
        "reference (Python original, N=1000): shaping 23.5 / 23.3 / 35.0 ms, serialising 44.2 / 156.1 / 18.6 ms (deepseek / openrouter / mistral)"
    );
}
