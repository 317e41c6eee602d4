//! Standalone simulator: `hermes-sim <profile> [port] [--fail-mid-stream] [--reject-message-field F]...`.

use std::process::ExitCode;

use hermes_sim::{PROFILES, Switches, serve_with};

const USAGE: &str =
    "usage: hermes-sim <profile> [port] [--fail-mid-stream] [--reject-message-field FIELD]...";

#[tokio::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut profile = None;
    let mut port: u16 = 0;
    let mut switches = Switches::default();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--fail-mid-stream" => switches.fail_mid_stream = true,
            "--reject-message-field" => match args.next() {
                Some(f) => switches.reject_message_fields.push(f),
                None => {
                    eprintln!("{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                eprintln!("{USAGE}\nprofiles: {}", PROFILES.join(", "));
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
        eprintln!("{USAGE}\nprofiles: {}", PROFILES.join(", "));
        return ExitCode::from(2);
    };
    match serve_with(&profile, port, switches).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hermes-sim: {e}");
            ExitCode::FAILURE
        }
    }
}
