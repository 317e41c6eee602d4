//! `hermes`: the command-line interface with the built-in routes.

/// mimalloc, not glibc's allocator (the default `mimalloc` feature): a gateway's turn allocates
/// and frees thousands of small buffers (bodies, JSON values, rows). Measured in one run each
/// (issue 50, `cargo xtask bench serve --quick`): instructions per continued turn -11% under
/// callgrind, CPU per continued turn -10%, requests per second at 64 clients +27-54%; memory per
/// open stream +30-38 KiB, which is why a build may leave it out.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    hermes_cli::run(hermes_cli::Engine::builtin())
}
