//! `hermes`: the command-line interface with the built-in routes.

/// mimalloc, not glibc's allocator: a gateway's turn allocates and frees thousands of small
/// buffers (bodies, JSON values, rows), and glibc's `malloc`/`free` were a fifth of a continued
/// turn's instructions under callgrind (issue 50; `cargo xtask bench serve --instructions`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    hermes_cli::run(hermes_cli::Engine::builtin())
}
