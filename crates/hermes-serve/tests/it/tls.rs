//! TLS termination: the gateway serves HTTPS with a certificate from PEM files (a test CA's,
//! in `tests/tls/`), a client trusting that CA gets its answers, a plain-HTTP client gets none,
//! and unusable files are errors naming the file.

use std::path::Path;

use hermes_serve::tls::server_config;
use hermes_sim::Sim;
use serde_json::json;

use crate::{KEY, start_with};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/tls");

fn file(name: &str) -> std::path::PathBuf {
    Path::new(DIR).join(name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_serves_https_with_a_pem_certificate() {
    let sim = Sim::start("deepseek-v4").await.unwrap();
    let tls = server_config(&file("server.pem"), &file("server.key")).unwrap();
    let gateway = start_with(&sim.base_url(), |c| c, Some(tls)).await;
    let ca = reqwest::Certificate::from_pem(&std::fs::read(file("ca.pem")).unwrap()).unwrap();
    let client = reqwest::Client::builder()
        .add_root_certificate(ca)
        .build()
        .unwrap();
    let port = gateway.addr.port();
    let health = client
        .get(format!("https://localhost:{port}/healthz"))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let reply = crate::json_of(client
        .post(format!("https://127.0.0.1:{port}/v1/chat/completions"))
        .bearer_auth(KEY)
        .json(&json!({"model": "deepseek/deepseek-v4-pro", "messages": [{"role": "user", "content": "hello"}]}))).await;
    assert!(reply["hermes_session"].is_string(), "{reply}");
    // Plain HTTP on the TLS port gets no answer.
    assert!(
        reqwest::get(format!("http://127.0.0.1:{port}/healthz"))
            .await
            .is_err()
    );
    gateway.stop().await;
}

#[test]
fn unusable_tls_files_are_errors_naming_the_file() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let missing = server_config(&file("nope.pem"), &file("server.key")).unwrap_err();
    assert!(missing.to_string().contains("nope.pem"), "{missing}");
    let swapped = server_config(&file("server.key"), &file("server.key")).unwrap_err();
    assert!(swapped.to_string().contains("server.key"), "{swapped}");
    let wrong_key = server_config(&file("server.pem"), &file("ca.pem")).unwrap_err();
    assert!(wrong_key.to_string().contains("ca.pem"), "{wrong_key}");
}
