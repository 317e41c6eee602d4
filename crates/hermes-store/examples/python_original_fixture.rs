//! Writes the Python original's `state.db` fixture (see `hermes_store::testing::original`) at
//! the path given, to try `hermes sessions import --from-hermes-agent PATH` by hand:
//!
//! `cargo run -p hermes-store --features test-support --example python_original_fixture -- /tmp/original.db`

use std::path::PathBuf;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: python_original_fixture PATH (a file that does not exist yet)");
        std::process::exit(2);
    };
    if path.exists() {
        eprintln!("{} exists; give a new path", path.display());
        std::process::exit(2);
    }
    let ids = hermes_store::testing::write_python_original(
        &path,
        &hermes_store::testing::OriginalFixture::default(),
    )
    .await;
    println!("wrote {}: {ids:?}", path.display());
}
