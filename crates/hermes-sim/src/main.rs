//! Standalone simulator: `hermes-sim <profile> [port] [--chunk-delay-ms N] [--delay-ms N]
//! [--fail-mid-stream] [--reject-message-field F]...` (`--chunk-delay-ms`: a pause of N ms before
//! each SSE event after the first, see [`hermes_sim::SimBuilder::chunk_delay`]; `--delay-ms`: a
//! pause of N ms before any answer, [`hermes_sim::SimBuilder::reply_delay`]; plus the `bedrock` switches
//! `--model-stream-error`, `--redacted-reasoning`, `--refuse-redacted`, `--check-clock-skew`,
//! and the `gemini` switches `--require-api-key`, `--signature-on-text-fragment`).
//!
//! Prints the base URL (e.g. `http://127.0.0.1:41234`) as the first line of stdout, then serves
//! until killed. The signing key is [`hermes_sim::DEFAULT_KEY`] unless [`hermes_sim::KEY_ENV`] is
//! set.

use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use hermes_sim::{DEFAULT_KEY, KEY_ENV, PROFILES, Profile, Sim, SimError, Switches};

const USAGE: &str = "usage: hermes-sim <profile> [port] [--chunk-delay-ms N] [--delay-ms N] [--fail-mid-stream] [--reject-message-field FIELD]... [--model-stream-error] [--redacted-reasoning] [--refuse-redacted] [--check-clock-skew] [--require-api-key] [--signature-on-text-fragment] [--max-output-tokens-reached]";

fn usage_with_profiles() -> String {
    let mut out = format!("{USAGE}\nprofiles:");
    for p in PROFILES {
        out.push_str(&format!("\n  {:<15} {}", p.name, p.about));
    }
    out
}

async fn serve(
    profile: &str,
    port: u16,
    switches: Switches,
    chunk_delay: Duration,
    reply_delay: Duration,
) -> Result<(), SimError> {
    let key = std::env::var(KEY_ENV)
        .ok()
        .filter(|k| !k.is_empty())
        .map_or_else(|| DEFAULT_KEY.to_vec(), String::into_bytes);
    let sim = Sim::builder(Profile::builtin(profile)?)
        .switches(switches)
        .key(key)
        .port(port)
        .chunk_delay(chunk_delay)
        .reply_delay(reply_delay)
        .start()
        .await?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", sim.base_url())?;
        out.flush()?;
    }
    sim.serve().await
}

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut profile = None;
    let mut port: u16 = 0;
    let mut switches = Switches::default();
    let mut chunk_delay = Duration::ZERO;
    let mut reply_delay = Duration::ZERO;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--fail-mid-stream" => switches.fail_mid_stream = true,
            "--model-stream-error" => switches = switches.failing_with_model_stream_error(),
            "--redacted-reasoning" => switches.redacted_reasoning = true,
            "--refuse-redacted" => switches.refuse_redacted = true,
            "--check-clock-skew" => switches.check_clock_skew = true,
            "--require-api-key" => switches.require_api_key = true,
            "--signature-on-text-fragment" => switches.signature_on_text_fragment = true,
            "--max-output-tokens-reached" => switches.max_output_tokens_reached = true,
            "--chunk-delay-ms" => match args.next().and_then(|ms| ms.parse().ok()) {
                Some(ms) => chunk_delay = Duration::from_millis(ms),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--delay-ms" => match args.next().and_then(|ms| ms.parse().ok()) {
                Some(ms) => reply_delay = Duration::from_millis(ms),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "--reject-message-field" => match args.next() {
                Some(f) => switches.reject_message_fields.push(f),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                eprintln!("{}", usage_with_profiles());
                return ExitCode::SUCCESS;
            }
            _ if profile.is_none() => profile = Some(arg),
            _ => match arg.parse() {
                Ok(p) => port = p,
                Err(_) => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
        }
    }
    let Some(profile) = profile else {
        eprintln!("{}", usage_with_profiles());
        return ExitCode::from(2);
    };
    match serve(&profile, port, switches, chunk_delay, reply_delay).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hermes-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
