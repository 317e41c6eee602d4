//! What a request is aimed at (provider, base URL host, model) and the host rules of
//! docs/spec.md §3.

use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use url::{Host, Url};

/// The host of a base URL, parsed with a real URL parser (userinfo, IPv6 literals, ports and a
/// trailing dot handled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetHost {
    /// A domain name, lowercased, without a trailing dot.
    Domain(String),
    /// An IPv4 literal.
    V4(Ipv4Addr),
    /// An IPv6 literal.
    V6(Ipv6Addr),
}

impl TargetHost {
    /// Parses the host out of a base URL. A URL without a scheme is read as `https://…`; a
    /// symbolic `sim://PROFILE` URL has no host.
    pub fn from_base_url(base_url: &str) -> Option<TargetHost> {
        let trimmed = base_url.trim();
        if trimmed.is_empty() {
            return None;
        }
        let url = match Url::parse(trimmed) {
            Ok(url) => url,
            Err(url::ParseError::RelativeUrlWithoutBase) => {
                Url::parse(&format!("https://{trimmed}")).ok()?
            }
            Err(_) => return None,
        };
        if !matches!(url.scheme(), "http" | "https") {
            return None;
        }
        // WHATWG parsing reads `http:///v1`, `http:/v1` and `http:v1` as host `v1`: a base URL
        // names its host right after `scheme://`, or it has none.
        if let Some(after) = trimmed.get(url.scheme().len()..)
            && after.starts_with(':')
            && (!after.starts_with("://") || after[3..].starts_with(['/', '\\']))
        {
            return None;
        }
        match url.host()? {
            Host::Domain(d) => {
                let d = d.trim_end_matches('.').to_ascii_lowercase();
                (!d.is_empty()).then_some(TargetHost::Domain(d))
            }
            Host::Ipv4(ip) => Some(TargetHost::V4(ip)),
            Host::Ipv6(ip) => Some(TargetHost::V6(ip)),
        }
    }

    /// True when this host is `domain` or a subdomain of it on a label boundary.
    pub fn is_within(&self, domain: &str) -> bool {
        match self {
            TargetHost::Domain(host) => {
                let domain = domain.trim_end_matches('.');
                host.eq_ignore_ascii_case(domain)
                    || (host.len() > domain.len()
                        && host.ends_with(domain)
                        && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
                        && host[host.len() - domain.len()..].eq_ignore_ascii_case(domain))
            }
            TargetHost::V4(_) | TargetHost::V6(_) => false,
        }
    }

    /// The local-endpoint rule of docs/spec.md §3: localhost, loopback, `0.0.0.0`, container and VM
    /// host names, private ranges and the shared 100.64.0.0/10 range.
    pub fn is_local_endpoint(&self) -> bool {
        match self {
            TargetHost::Domain(host) => {
                host == "localhost"
                    || host.ends_with(".localhost")
                    || ["docker.internal", "containers.internal", "lima.internal"]
                        .iter()
                        .any(|suffix| self.is_within(suffix) && host != suffix)
            }
            TargetHost::V4(ip) => {
                let [a, b, ..] = ip.octets();
                ip.is_loopback()
                    || ip.is_unspecified()
                    || ip.is_private()
                    || ip.is_link_local()
                    || (a == 100 && (64..128).contains(&b))
            }
            TargetHost::V6(ip) => {
                if let Some(v4) = ip.to_ipv4_mapped() {
                    return TargetHost::V4(v4).is_local_endpoint();
                }
                let first = ip.segments()[0];
                ip.is_loopback()
                    || ip.is_unspecified()
                    || (first & 0xfe00) == 0xfc00 // unique local fc00::/7
                    || (first & 0xffc0) == 0xfe80 // link local fe80::/10
            }
        }
    }
}

impl fmt::Display for TargetHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetHost::Domain(d) => f.write_str(d),
            TargetHost::V4(ip) => write!(f, "{ip}"),
            TargetHost::V6(ip) => write!(f, "{ip}"),
        }
    }
}

/// The request a route is resolved for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteTarget {
    /// Provider name, trimmed and lowercased.
    pub provider: String,
    /// Host of the base URL, if it has one.
    pub host: Option<TargetHost>,
    /// Model id, case kept.
    pub model: String,
}

impl RouteTarget {
    /// Normalises a provider name, base URL and model into a target.
    pub fn new(provider: &str, base_url: Option<&str>, model: &str) -> Self {
        RouteTarget {
            provider: provider.trim().to_lowercase(),
            host: base_url.and_then(TargetHost::from_base_url),
            model: model.to_owned(),
        }
    }

    /// The host as text (empty when there is none), without port: the verdict key's host.
    pub fn host_key(&self) -> String {
        self.host
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    /// True when the host is `domain` or one of its subdomains.
    pub(crate) fn host_within(&self, domain: &str) -> bool {
        self.host.as_ref().is_some_and(|h| h.is_within(domain))
    }

    /// True when the lowercased model id contains `needle` (lowercase).
    pub(crate) fn model_contains(&self, needle: &str) -> bool {
        self.model.to_lowercase().contains(needle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(url: &str) -> Option<TargetHost> {
        TargetHost::from_base_url(url)
    }

    #[test]
    fn host_matching_respects_label_boundaries() {
        let groq = |u: &str| host(u).is_some_and(|h| h.is_within("groq.com"));
        assert!(groq("https://api.groq.com/openai/v1"));
        assert!(groq("https://groq.com"));
        assert!(groq("https://API.GROQ.COM./v1"));
        assert!(groq("api.groq.com/openai/v1"));
        assert!(!groq("https://api.groq.com.evil.test/v1"));
        assert!(!groq("https://groq.com@evil.test/v1"));
        assert!(!groq("https://notgroq.com/v1"));
        assert!(!groq("https://evil.test/groq.com/v1"));
        assert!(!groq("https://evil.test/?h=api.groq.com"));
    }

    #[test]
    fn local_endpoints_are_recognised() {
        let local = |u: &str| host(u).is_some_and(|h| h.is_local_endpoint());
        for url in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080",
            "http://127.8.9.1",
            "http://[::1]:1234/v1",
            "http://0.0.0.0:8000",
            "http://host.docker.internal:11434",
            "http://gpu.containers.internal",
            "http://vm.lima.internal",
            "http://10.0.0.5/v1",
            "http://172.16.3.4/v1",
            "http://172.31.255.255",
            "http://192.168.1.10:1234",
            "http://100.64.0.1",
            "http://100.127.255.254",
            "http://[fd00::1]/v1",
        ] {
            assert!(local(url), "{url} should be local");
        }
        for url in [
            "https://api.openai.com/v1",
            "http://172.32.0.1",
            "http://100.128.0.1",
            "http://100.63.255.255",
            "http://8.8.8.8",
            "http://docker.internal.evil.test",
            "http://localhost.evil.test",
        ] {
            assert!(!local(url), "{url} should not be local");
        }
    }

    #[test]
    fn symbolic_and_empty_urls_have_no_host() {
        assert_eq!(host("sim://deepseek-v4"), None);
        assert_eq!(host(""), None);
    }

    #[test]
    fn a_url_with_nothing_between_its_slashes_has_no_host() {
        // WHATWG parsing alone would read each of these as host `v1`.
        for url in [
            "http:///v1",
            "https:///v1",
            "HTTP:///v1",
            "http:/v1",
            "http:v1",
            "http:\\\\v1",
        ] {
            assert_eq!(host(url), None, "{url}");
        }
        assert_eq!(host("http://v1/x"), Some(TargetHost::Domain("v1".into())));
        assert_eq!(host("v1/x"), Some(TargetHost::Domain("v1".into())));
        assert_eq!(
            host("  https://API.openai.com/v1"),
            Some(TargetHost::Domain("api.openai.com".into()))
        );
    }
}
